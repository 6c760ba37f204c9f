/* commsched — the HTML report's output helpers (report_html_internal.h):
 * escaping for HTML, XML and the JSON data block, and the figures as
 * people read them. Escaping is where the page's promise lives: no user
 * text can close an element or a <script>, or spell "//" (a '/' becomes
 * &#47; in markup and \/ in JSON), and invalid UTF-8 or control
 * characters become U+FFFD, so every page stays valid whatever the names. */
#include "report_html_internal.h"
#include "utf8.h"

#include <math.h>
#include <string.h>

#include "fmt_g.h"

void cs_html_put_lines(cs_html_out *w, const char *const *lines)
{
    for (size_t i = 0; lines[i]; i++)
        fputs(lines[i], w->f);
}

/* Text for HTML content, attribute values and XML (the SVG file): the five
 * specials as entities, '/' as &#47; (so no user text can form "//"),
 * newlines as &#10; (attributes keep them), other control characters and
 * invalid UTF-8 as U+FFFD. */
void cs_html_esc(cs_html_out *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = cs_utf8_seq(p);
        if (n == 0) {
            cs_html_put(w, "\xEF\xBF\xBD");
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, n, w->f);
            p += n;
            continue;
        }
        switch (*p) {
        case '&': cs_html_put(w, "&amp;"); break;
        case '<': cs_html_put(w, "&lt;"); break;
        case '>': cs_html_put(w, "&gt;"); break;
        case '"': cs_html_put(w, "&quot;"); break;
        case '\'': cs_html_put(w, "&#39;"); break;
        case '/': cs_html_put(w, "&#47;"); break;
        case '\n': cs_html_put(w, "&#10;"); break;
        case '\t': cs_html_put(w, " "); break;
        default:
            if (*p < 0x20 || *p == 0x7F)
                cs_html_put(w, "\xEF\xBF\xBD");
            else
                fputc(*p, w->f);
        }
        p++;
    }
}

/* The first line of s, escaped (limiting factors span lines). */
void cs_html_esc_first_line(cs_html_out *w, const char *s)
{
    char buf[256];
    size_t n = strcspn(s, "\n");
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    cs_html_esc(w, buf);
}

/* A JSON string for the data block: '<', '>', '&' and '/' escaped so the
 * block can never close its <script> or spell a URL. */
void cs_html_jstr(cs_html_out *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', w->f);
    while (*p) {
        size_t n = cs_utf8_seq(p);
        if (n == 0) {
            cs_html_put(w, "\\ufffd");
            p++;
            continue;
        }
        if (n > 1) {
            /* U+2028 / U+2029 are fine in JSON but not in older JS. */
            if (n == 3 && p[0] == 0xE2 && p[1] == 0x80 &&
                (p[2] == 0xA8 || p[2] == 0xA9))
                cs_html_putf(w, "\\u%04x", p[2] == 0xA8 ? 0x2028u : 0x2029u);
            else
                fwrite(p, 1, n, w->f);
            p += n;
            continue;
        }
        switch (*p) {
        case '"': cs_html_put(w, "\\\""); break;
        case '\\': cs_html_put(w, "\\\\"); break;
        case '/': cs_html_put(w, "\\/"); break;
        case '\n': cs_html_put(w, "\\n"); break;
        case '<': cs_html_put(w, "\\u003c"); break;
        case '>': cs_html_put(w, "\\u003e"); break;
        case '&': cs_html_put(w, "\\u0026"); break;
        default:
            if (*p < 0x20 || *p == 0x7F)
                cs_html_putf(w, "\\u%04x", (unsigned)*p);
            else
                fputc(*p, w->f);
        }
        p++;
    }
    fputc('"', w->f);
}

/* Exact figures for data-value attributes (tests compare them with
 * `simulate --format json`). */
void cs_html_num_exact(cs_html_out *w, double d)
{
    char buf[CS_FMT_G_SIZE];
    cs_fmt_g(buf, d, 17);
    cs_html_put(w, buf);
}

/* Data-block numbers: whole units (ns, bytes) are enough to draw and to
 * read in a tooltip, and keep the block small. */
void cs_html_num_int(cs_html_out *w, double d)
{
    if (!(d == d) || isinf(d))
        cs_html_put(w, "0");
    else
        cs_html_putf(w, "%.0f", floor(d + 0.5));
}

/* ---- human-readable figures ---------------------------------------------- */

const char *cs_html_fmt_time(double ns, char *buf, size_t size)
{
    return cs_fmt_time(ns, 3, "\xC2\xB5s", buf, size);
}

/* Axis labels: as short as the step allows. */
const char *cs_html_fmt_tick(double ns, double step, char *buf, size_t size)
{
    const char *unit = "ns";
    double div = 1;
    if (step >= 1e8 || ns >= 1e9) {
        unit = "s";
        div = 1e9;
    } else if (step >= 1e5 || ns >= 1e6) {
        unit = "ms";
        div = 1e6;
    } else if (step >= 1e2 || ns >= 1e3) {
        unit = "\xC2\xB5s";
        div = 1e3;
    }
    if (ns == 0) {
        snprintf(buf, size, "0");
        return buf;
    }
    double v = ns / div, s = step / div;
    int dec = s >= 1 ? 0 : s >= 0.1 ? 1 : s >= 0.01 ? 2 : 3;
    snprintf(buf, size, "%.*f %s", dec, v, unit);
    return buf;
}


const char *cs_html_fmt_pct(double frac, char *buf, size_t size)
{
    snprintf(buf, size, "%.1f%%", 100.0 * frac);
    return buf;
}

double cs_html_nice_step(double range, int ticks)
{
    double raw = range / ticks;
    if (!(raw > 0))
        return 1;
    double mag = pow(10, floor(log10(raw))), f = raw / mag;
    return mag * (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10);
}

/* Memory ticks at round binary sizes (64 MiB, not 67.1 MB). */
double cs_html_nice_bytes_step(double max)
{
    double unit = 1;
    while (unit * 1024 <= max / 2 && unit < 0x1p100) /* bounded if max is not */
        unit *= 1024;
    return cs_html_nice_step(max / unit, 4) * unit;
}
