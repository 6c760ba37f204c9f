/* commsched — the one JSON writer: every file the library writes as JSON
 * (graphs, simulation and estimate reports, measured-run reports, Chrome
 * traces) goes through it. Not installed.
 *
 * It streams: values go into a buffer inside the writer that is handed to
 * fwrite when full, so no tree is ever built, memory is O(nesting depth)
 * whatever the size of the document, and a million-node graph is written
 * at the speed of memcpy rather than of a json_t per field.
 *
 * The writer places the commas itself (it tracks the nesting); the caller
 * chooses the whitespace: each open container has a separator written
 * after every comma (" " or "\n  " ...) and a colon (":" or ": "), set with
 * cs_jw_layout and inherited by the containers opened inside it. Anything
 * else (a newline before the first element, before a closing bracket) is
 * written with cs_jw_raw, which leaves the comma state alone.
 *
 * Strings are checked as UTF-8 (overlong forms, surrogates and code
 * points past U+10FFFF are invalid, as for jansson) and escaped exactly as
 * jansson escapes them: \" \\ \b \f \n \r \t, other control characters as
 * \u00XX, everything else (including '/' and non-ASCII) as is.
 *
 * Numbers come in the two styles the files had before this writer, so they
 * stay byte-identical: jansson's (cs_jw_number: graph files and the
 * simulation report's header objects, "1e-7", "30.0") and printf's
 * (cs_jw_number_g: report rows, measured runs, traces, "1e-07", "30").
 * Both print integral values below 2^53 as integers.
 *
 * Errors are sticky: the first failure (invalid UTF-8, a non-finite number,
 * a misnested call, a failed write) is remembered, later calls write
 * nothing, and cs_jw_finish reports it. Callers therefore check once, at
 * the end.
 *
 * A writer may also keep its text in memory (cs_jw_init_memory): the items
 * of one large array made in parts on several threads, each part spliced
 * onto the stream's writer in order (cs_jw_splice), byte for byte what one
 * writer would have written; cs_jw_array_items does all of that. */
#ifndef COMMSCHED_JSON_WRITER_H
#define COMMSCHED_JSON_WRITER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "commsched/status.h"

/* Deeper documents are refused (EINVAL): ours nest at most 5 levels. */
#define CS_JW_MAX_DEPTH 32
#define CS_JW_BUFFER 65536

typedef enum cs_jw_error {
    CS_JW_OK = 0,
    CS_JW_EUTF8,   /* a string is not valid UTF-8 */
    CS_JW_ENUMBER, /* NaN or an infinity where a number was required */
    CS_JW_ENEST,   /* a key outside an object, an unbalanced end, too deep */
    CS_JW_EIO,     /* the stream refused a write */
    CS_JW_ENOMEM   /* a memory writer could not grow its text */
} cs_jw_error;

typedef struct cs_jw_level {
    const char *sep;   /* written after each comma */
    const char *colon; /* between a key and its value */
    unsigned char sep_len, colon_len; /* their lengths */
    unsigned char indent; /* 0, or spaces per level (cs_jw_indent) */
    unsigned char is_object, has_items, after_key;
} cs_jw_level;

typedef struct cs_jw {
    FILE *f;   /* NULL: a memory writer, its text in mem */
    char *mem; /* what a memory writer flushed, mem_len of mem_cap bytes */
    size_t mem_len, mem_cap;
    size_t len;
    cs_jw_error error;
    int depth; /* levels[0] is the top level (outside any container) */
    int base;  /* the depth cs_jw_finish expects (cs_jw_items_of) */
    cs_jw_level levels[CS_JW_MAX_DEPTH + 1];
    char buf[CS_JW_BUFFER];
} cs_jw;

/* Starts a document on f (not owned: the writer never closes it). The
 * top-level layout is ", " / ": " until cs_jw_layout changes it. The
 * struct holds the 64 KiB buffer: allocate it, or keep it local to a
 * function that does not recurse. */
void cs_jw_init(cs_jw *w, FILE *f);

/* The separator after each comma and the colon of the innermost open
 * container (the top level when none is open). Both strings are borrowed
 * and must stay valid while the container is open (string literals), at
 * most 255 bytes each (longer fails the writer: CS_JW_ENEST). */
void cs_jw_layout(cs_jw *w, const char *sep, const char *colon);

/* jansson's JSON_INDENT(width) from the innermost open container inward
 * (width 1..31; the containers opened inside inherit it): each item on a
 * line of its own, indented width spaces per level, the closing bracket on
 * a line of its own, empty containers as [] and {}. Replaces the sep of
 * cs_jw_layout; the colon still comes from it (": " for jansson's). */
void cs_jw_indent(cs_jw *w, int width);

/* Text written as is (whitespace between items). Never a value: the comma
 * state does not change. */
void cs_jw_raw(cs_jw *w, const char *s);

void cs_jw_object(cs_jw *w);
void cs_jw_array(cs_jw *w);
/* Closes the innermost object or array. */
void cs_jw_end(cs_jw *w);
/* A key of the innermost object (escaped like any string). */
void cs_jw_key(cs_jw *w, const char *key);

/* Values: in an array, after a key, or at the top level. */
void cs_jw_string(cs_jw *w, const char *s); /* NULL writes null */
void cs_jw_null(cs_jw *w);
void cs_jw_bool(cs_jw *w, int b);
void cs_jw_int(cs_jw *w, int64_t v);
void cs_jw_uint(cs_jw *w, uint64_t v);
/* A key and its value in one call: the members most objects are made of. */
void cs_jw_key_int(cs_jw *w, const char *key, int64_t v);
void cs_jw_key_string(cs_jw *w, const char *key, const char *s);
/* A real as jansson's json_real dumps it with JSON_REAL_PRECISION(p)
 * (p = 0: 17): "%.*g", ".0" appended when that has neither '.' nor 'e', and
 * the exponent without '+' or leading zeros (1e-5, 1.5e20). */
void cs_jw_real(cs_jw *w, double d, int precision);
/* Integral values below 2^53 as integers (runtime_ns: 120000, not
 * 120000.0), others as cs_jw_real. */
void cs_jw_number(cs_jw *w, double d, int precision);
/* Integral values below 2^53 as integers ("-0" for negative zero), others
 * as printf's "%.*g" writes them (exponent "e-07", no ".0" added). */
void cs_jw_number_g(cs_jw *w, double d, int precision);
/* The same, with NaN and infinities written as null (a figure that does
 * not exist) instead of failing. */
void cs_jw_number_g_or_null(cs_jw *w, double d, int precision);
/* A jansson value, as json_dumpf would write it (keys in insertion order,
 * reals with precision 17), every container in it with the layout sep /
 * colon ("" / ":" is JSON_COMPACT). */
void cs_jw_json(cs_jw *w, const json_t *v, const char *sep,
                const char *colon);

/* For a value the caller writes itself, straight onto the stream (another
 * library's output, a caller's callback): places it like any value
 * (comma, separator), flushes the buffer and returns the stream, or NULL
 * when the writer has already failed. The writer counts the value as
 * written and goes on after whatever the caller put on the stream. */
FILE *cs_jw_value_stream(cs_jw *w);

/* Flushes the buffer. Returns COMMSCHED_OK, COMMSCHED_EIO when a write
 * failed, COMMSCHED_ENOMEM when a memory writer could not grow, or
 * COMMSCHED_EINVAL for anything the document could not hold (w->error
 * says which); the caller words the message. Does not set an error struct
 * and does not fflush the stream. */
commsched_status cs_jw_finish(cs_jw *w);

/* A writer whose text stays in memory, in a buffer it owns (freed by
 * cs_jw_release), until cs_jw_splice moves it onto another writer. */
void cs_jw_init_memory(cs_jw *w);
/* Starts memory writer part over, its text and error cleared (its memory
 * kept), as the continuation of w's innermost open container, an array:
 * same nesting, layout and indent, so each value part writes is an item
 * of that array, with its comma and separator (the first one too when
 * has_items: items were written before this part). */
void cs_jw_items_of(cs_jw *part, const cs_jw *w, int has_items);
/* Writes the text of memory writer part (made by cs_jw_items_of(part, w,
 * ..)) onto w, its items counted as those of w's container, and empties
 * part. A part that failed passes its error to w instead, unless w had
 * failed already; its text is dropped. */
void cs_jw_splice(cs_jw *w, cs_jw *part);
/* Frees a memory writer's text. */
void cs_jw_release(cs_jw *w);

/* Item i of an array, written on w (cs_jw_array_items). */
typedef void (*cs_jw_item_fn)(cs_jw *w, size_t i, const void *ctx);

/* Items 0 .. n-1 of w's innermost open container, an array, item i
 * written by item(.., i, ctx). When threaded (the caller's judgement that
 * the work is worth threads) and OpenMP gives more than one thread
 * outside any parallel region, parts of per_part items are made on every
 * core, each thread in a memory writer of its own allocated here (on the
 * calling thread's heap), and spliced onto w in the parts' order: the
 * bytes are those one writer makes, and w reports the first error among
 * them (items after a failed one are not written). item must only read
 * what ctx points to. */
void cs_jw_array_items(cs_jw *w, size_t n, size_t per_part, int threaded,
                       cs_jw_item_fn item, const void *ctx);

#endif /* COMMSCHED_JSON_WRITER_H */
