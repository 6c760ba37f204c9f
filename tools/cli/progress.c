/* commsched CLI — the progress line (progress.h). */
#include "progress.h"

#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

/* Ten frames a second at most: smooth enough to read, and cheap enough
 * that a caller may report every node. */
#define FRAME_S 0.1

enum { BAR = 20 };

static void draw(cli_progress *p)
{
    char line[256];
    int n;
    double mib = 1024.0 * 1024.0;
    if (p->total > 0) {
        uint64_t done = p->done < p->total ? p->done : p->total;
        unsigned fill = (unsigned)(done * BAR / p->total);
        char bar[BAR + 1];
        for (unsigned i = 0; i < BAR; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[BAR] = '\0';
        unsigned pct = (unsigned)(done * 100 / p->total);
        if (p->unit)
            n = snprintf(line, sizeof line, "%s [%s] %3u%% %llu/%llu %s",
                         p->label, bar, pct, (unsigned long long)done,
                         (unsigned long long)p->total, p->unit);
        else
            n = snprintf(line, sizeof line, "%s [%s] %3u%% %.1f/%.1f MiB",
                         p->label, bar, pct, (double)done / mib,
                         (double)p->total / mib);
    } else if (p->done == 0) {
        n = snprintf(line, sizeof line, "%s ...", p->label);
    } else if (p->unit) {
        n = snprintf(line, sizeof line, "%s %llu %s", p->label,
                     (unsigned long long)p->done, p->unit);
    } else {
        n = snprintf(line, sizeof line, "%s %.1f MiB", p->label,
                     (double)p->done / mib);
    }
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len >= sizeof line)
        len = sizeof line - 1;
    if (len > p->width - 1) /* a wrapped line cannot be redrawn with \r */
        len = p->width - 1;
    fprintf(stderr, "\r%.*s", (int)len, line);
    for (size_t i = len; i < p->shown; i++) /* the longer last frame */
        fputc(' ', stderr);
    fflush(stderr);
    p->shown = len > p->shown ? len : p->shown;
}

void cli_progress_begin(cli_progress *p, const char *unit, uint64_t total,
                        const char *fmt, ...)
{
    memset(p, 0, sizeof *p);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->label, sizeof p->label, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof p->label) /* cut: say so */
        memcpy(p->label + sizeof p->label - 4, "...", 4);
    p->unit = unit;
    p->total = total;
    struct winsize ws;
    p->width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1
                   ? ws.ws_col
                   : 80;
    /* A caller may still force it (run --progress): then the first
     * cli_progress_set draws. */
    p->on = isatty(STDERR_FILENO);
    if (p->on) {
        draw(p);
        p->next = cli_now() + FRAME_S;
    }
}

void cli_progress_set(cli_progress *p, uint64_t done)
{
    if (!p->on)
        return;
    p->done = done;
    double now = cli_now();
    if (now < p->next)
        return;
    draw(p);
    p->next = now + FRAME_S;
}

void cli_progress_end(cli_progress *p)
{
    if (p->on && p->shown) {
        fputc('\r', stderr);
        for (size_t i = 0; i < p->shown; i++)
            fputc(' ', stderr);
        fputc('\r', stderr);
        fflush(stderr);
    }
    p->on = 0;
    p->shown = 0;
}

void cli_progress_fn(void *arg, uint64_t done, uint64_t total)
{
    cli_progress *p = arg;
    p->total = total;
    cli_progress_set(p, done);
}

/* The library writes the graph through one FILE, knowing nothing of
 * progress: a stream passing every byte on counts them for the line (the
 * importers report their reading through commsched_progress_fn). */

static ssize_t counted_write(void *cookie, const char *buf, size_t size)
{
    counted *c = cookie;
    size_t put = fwrite(buf, 1, size, c->to);
    c->n += put;
    cli_progress_set(c->p, c->n);
    return (ssize_t)put; /* short (0 on error): fopencookie's convention */
}

int cli_write_graph(const commsched_graph *g, const uint32_t *order,
                    const char *schedule_json, const char *out_path,
                    const char *sub)
{
    cli_out out;
    commsched_error err = {0};
    int rc = cli_out_open(&out, out_path);
    if (rc != 0)
        return rc;
    cli_progress p;
    const char *name = out.f == stdout ? "standard output" : out_path;
    const char *slash = strrchr(name, '/');
    cli_progress_begin(&p, NULL, 0, "commsched %s: writing %s", sub,
                       slash ? slash + 1 : name);
    counted c = {out.f, &p, 0};
    FILE *f = NULL;
    if (p.on) {
        cookie_io_functions_t io = {NULL, counted_write, NULL, NULL};
        f = fopencookie(&c, "w", io);
    }
    commsched_status st = commsched_graph_save_stream(
        g, order, schedule_json, f ? f : out.f, &err);
    /* Closing the counting stream flushes its last bytes into out.f; a
     * failure there shows as out.f's error at commit. */
    if (f)
        fclose(f);
    cli_progress_end(&p);
    if (st != COMMSCHED_OK) {
        cli_out_abort(&out);
        return cli_report(out_path, &err);
    }
    return cli_out_commit(&out);
}
