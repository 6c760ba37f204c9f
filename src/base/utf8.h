/* commsched — UTF-8 text: validation, and cutting a name to fit a buffer,
 * a message or a table column. The one place that knows where a
 * character ends: every cut the library and the tools make (error texts,
 * trace names, table columns, imported names) goes through cs_utf8_cut or
 * cs_utf8_fit, so no output ever ends in half a character. Internal; the
 * tools reach cs_utf8_cut through commsched_utf8_cut (status.h). */
#ifndef COMMSCHED_UTF8_H
#define COMMSCHED_UTF8_H

#include <stddef.h>

/* Length of the well-formed UTF-8 sequence at p (1..4; 1 for ASCII, the
 * NUL included), 0 when the bytes there are not one (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, a sequence cut
 * short). Reads past p[0] only while the bytes are continuation bytes, so
 * it never runs over a terminating NUL. */
size_t cs_utf8_seq(const unsigned char *p);

/* 1 when the NUL-terminated s is well-formed UTF-8 (what JSON text may
 * hold). O(length). */
int cs_utf8_valid(const char *s);

/* The length of the longest prefix of the NUL-terminated s that is at
 * most max bytes and ends between two characters (a malformed byte counts
 * as one character). strlen(s) when it fits. O(min(length, max)). */
size_t cs_utf8_cut(const char *s, size_t max);

/* After snprintf(buf, size, ...) returned n: when the text was cut (n >=
 * size), drops the partial character the cut may have left at the end of
 * buf. Returns buf. O(size). */
char *cs_utf8_trim(char *buf, size_t size, int n);

/* Columns s takes on a terminal: one per character, two for the East
 * Asian wide and fullwidth ranges (CJK, Hangul, fullwidth forms, emoji).
 * O(length). */
size_t cs_utf8_width(const char *s);

/* s for a table column of `cols` columns: as it is when it fits, else
 * cut between characters to cols - 2 columns and ".." appended, then
 * padded with spaces to cols columns when `pad` (so "%s" aligns where
 * "%-*s" counted bytes). Writes at most size bytes with the NUL (cut
 * between characters again when buf is smaller) and returns buf. */
char *cs_utf8_fit(const char *s, size_t cols, int pad, char *buf,
                  size_t size);

#endif /* COMMSCHED_UTF8_H */
