/* commsched — UTF-8 validation and cuts between characters (utf8.h). */
#include "utf8.h"

#include <stdint.h>
#include <string.h>

size_t cs_utf8_seq(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if ((p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F))
            return 0; /* overlong, surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if ((p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80)
            return 0;
        if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F))
            return 0; /* overlong, past U+10FFFF */
        return 4;
    }
    return 0; /* a continuation byte, 0xC0/0xC1 or 0xF5.. */
}

int cs_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = cs_utf8_seq(p);
        if (n == 0)
            return 0;
        p += n;
    }
    return 1;
}

/* Bytes of the character at p, a malformed byte being one. */
static size_t char_len(const unsigned char *p)
{
    size_t n = cs_utf8_seq(p);
    return n ? n : 1;
}

size_t cs_utf8_cut(const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0;
    while (p[at]) {
        size_t n = char_len(p + at);
        if (at + n > max)
            break;
        at += n;
    }
    return at;
}

char *cs_utf8_trim(char *buf, size_t size, int n)
{
    if (size == 0 || n < 0 || (size_t)n < size)
        return buf;
    /* The cut left size - 1 bytes: drop a last character whose lead byte
     * announces more bytes than are left. */
    size_t len = strlen(buf), k = len, cont = 0;
    while (k > 0 && cont < 3 && ((unsigned char)buf[k - 1] & 0xC0) == 0x80) {
        k--;
        cont++;
    }
    unsigned lead = k > 0 ? (unsigned char)buf[k - 1] : 0;
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (lead >= 0xC0 && cont + 1 < need)
        buf[k - 1] = '\0';
    return buf;
}

/* The code point of the well-formed sequence of n bytes at p. */
static uint32_t code_point(const unsigned char *p, size_t n)
{
    if (n == 1)
        return p[0];
    uint32_t cp = p[0] & (0x7Fu >> n);
    for (size_t k = 1; k < n; k++)
        cp = (cp << 6) | (p[k] & 0x3Fu);
    return cp;
}

static int wide(uint32_t c)
{
    static const uint32_t r[][2] = {
        {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},
        {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
        {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE30, 0xFE4F},
        {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
        {0x1F680, 0x1F6FF}, {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD},
        {0x30000, 0x3FFFD},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (c >= r[i][0] && c <= r[i][1])
            return 1;
    return 0;
}

static size_t char_width(const unsigned char *p, size_t n)
{
    size_t ok = cs_utf8_seq(p);
    return ok && wide(code_point(p, n)) ? 2 : 1;
}

size_t cs_utf8_width(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t w = 0;
    while (*p) {
        size_t n = char_len(p);
        w += char_width(p, n);
        p += n;
    }
    return w;
}

/* Bytes of the longest prefix of s within cols columns; *used: its
 * columns. */
static size_t cut_cols(const char *s, size_t cols, size_t *used)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t at = 0, w = 0;
    while (p[at]) {
        size_t n = char_len(p + at), cw = char_width(p + at, n);
        if (w + cw > cols)
            break;
        at += n;
        w += cw;
    }
    *used = w;
    return at;
}

char *cs_utf8_fit(const char *s, size_t cols, int pad, char *buf,
                  size_t size)
{
    if (size == 0)
        return buf;
    size_t used, len = cut_cols(s, cols, &used);
    const char *tail = "";
    if (s[len] && cols >= 3) { /* longer than the column: cut and mark */
        len = cut_cols(s, cols - 2, &used);
        tail = "..";
        used += 2;
    }
    size_t room = size - 1;
    size_t take = cs_utf8_cut(s, len < room ? len : room);
    memcpy(buf, s, take);
    size_t at = take;
    for (const char *t = tail; *t && at < room; t++)
        buf[at++] = *t;
    for (size_t k = used; pad && k < cols && at < room; k++)
        buf[at++] = ' ';
    buf[at] = '\0';
    return buf;
}
