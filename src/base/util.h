/* commsched — small internal helpers shared by the library's files:
 * checked allocation, a string arena and an open-addressing name table.
 * Nothing here is public. */
#ifndef COMMSCHED_UTIL_H
#define COMMSCHED_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The smallest graph for which the library starts threads (OpenMP) on
 * its caller's behalf: the overlap pass's search, the save's node lines,
 * the statistics' rows. Below it each takes a few milliseconds on one
 * thread, and a compiler's process (which may run its own OpenMP runtime)
 * working on a small graph gets no threads started for it. */
#define CS_THREADS_MIN_NODES 10000u

/* Allocation that reports failure (the library never aborts on OOM: it
 * returns COMMSCHED_ENOMEM). Overflow of n * size also returns NULL. */
void *cs_calloc(size_t n, size_t size);
void *cs_malloc_array(size_t n, size_t size);
void *cs_realloc_array(void *p, size_t n, size_t size);

/* *acc += v, checked: returns nonzero when the sum does not fit (the
 * builder's limits keep loaded graphs far from it; this keeps any other
 * graph from reporting a wrapped figure). */
static inline int cs_add_i64(int64_t *acc, int64_t v)
{
    return __builtin_add_overflow(*acc, v, acc);
}

/* fopen(path, "rb") for a file the library reads whole: a directory
 * (which fopen accepts on Linux) is refused with errno EISDIR, so every
 * unopenable input is worded alike ("cannot open: Is a directory"). NULL
 * with errno set on failure. */
FILE *cs_fopen_input(const char *path);

/* Grows *arr (of *cap elements of elem_size) to hold at least need
 * elements, doubling. Returns 0, or -1 on allocation failure (*arr kept). */
int cs_grow(void **arr, size_t *cap, size_t need, size_t elem_size);

/* An append-only string arena: copied strings stay valid until the arena
 * is freed, so tables can hold borrowed `const char *` safely. */
typedef struct cs_arena_block cs_arena_block;
typedef struct cs_arena {
    cs_arena_block *head;
} cs_arena;

void cs_arena_init(cs_arena *a);
void cs_arena_fini(cs_arena *a);
/* Copies s (NULL gives NULL). Returns NULL on allocation failure. */
const char *cs_arena_strdup(cs_arena *a, const char *s);

/* Name -> uint32 index table (open addressing, linear probing) over an
 * array of records that each hold their name: value v's key is the
 * `const char *` at byte `offset` of record v of `base` (stride bytes
 * apart), so a slot holds the 4-byte value alone, not a key pointer too
 * (a million-node graph's name tables were a quarter of it). Keys are
 * borrowed: they must outlive the table (arena strings do), and record
 * v's name must be set before v is put. */
typedef struct cs_strmap {
    uint32_t *slots; /* values; UINT32_MAX is an empty slot */
    size_t cap;      /* power of two, or 0 */
    size_t count;
    const char *base; /* the records (may be NULL while count is 0) */
    size_t stride, offset;
} cs_strmap;

/* An empty table over the records at base (cs_strmap_init(&m, g->nodes,
 * sizeof *g->nodes, offsetof(cs_node, name))). */
void cs_strmap_init(cs_strmap *m, const void *base, size_t stride,
                    size_t offset);
void cs_strmap_fini(cs_strmap *m);
/* Room for n keys without growing. Returns 0, or -1 on OOM. */
int cs_strmap_reserve(cs_strmap *m, size_t n);
/* Inserts key -> val unless key is present. Returns 1 if inserted, 0 if the
 * key existed (*existing, when not NULL, receives its value), -1 on OOM.
 * key must be record val's name. */
int cs_strmap_put(cs_strmap *m, const char *key, uint32_t val,
                  uint32_t *existing);
/* The value for key, or UINT32_MAX. */
uint32_t cs_strmap_get(const cs_strmap *m, const char *key);

/* Lookups in a row, software-pipelined, for a caller that looks up many
 * keys one after the other (the builder resolving a million names): at
 * that size the slot array, the records and the names are all out of
 * cache, and each lookup waited for three misses in turn. The caller
 * queues the keys CS_STRMAP_AHEAD lookups before their turn
 * (cs_strmap_pipe_push hashes a key and prefetches its home slot, the
 * record in that slot half way, the record's name a quarter of the way
 * before), then puts or gets key i with its hash (cs_strmap_pipe_hash; the
 * _h forms are cs_strmap_put and cs_strmap_get given the key's hash). */
#define CS_STRMAP_AHEAD 16
typedef struct cs_strmap_pipe {
    uint64_t h[CS_STRMAP_AHEAD];
    const cs_strmap *m[CS_STRMAP_AHEAD];
    size_t n; /* keys queued so far; 0 to start */
} cs_strmap_pipe;

/* Queues key number p->n, to be looked up in m. */
void cs_strmap_pipe_push(cs_strmap_pipe *p, const cs_strmap *m,
                         const char *key);
/* The hash of key i: queued (i < p->n) and not yet overwritten
 * (p->n <= i + CS_STRMAP_AHEAD). */
uint64_t cs_strmap_pipe_hash(const cs_strmap_pipe *p, size_t i);
int cs_strmap_put_h(cs_strmap *m, const char *key, uint64_t h, uint32_t val,
                    uint32_t *existing);
uint32_t cs_strmap_get_h(const cs_strmap *m, const char *key, uint64_t h);

/* Human-readable figures shared by every report (table, HTML, runtime,
 * CLI), so the same quantity reads the same everywhere.
 * cs_fmt_bytes: "512 B", "1.50 GiB" (binary units; negatives keep their
 * sign). cs_fmt_time: "890 ns", "56.7 us", "1.234 ms", "2.000 s" with
 * ms_decimals digits for milliseconds and `us` as the microsecond unit
 * ("us", or "\xC2\xB5s" in HTML); a non-finite value prints "-". Both
 * write at most size bytes and return buf. */
const char *cs_fmt_bytes(double bytes, char *buf, size_t size);
const char *cs_fmt_time(double ns, int ms_decimals, const char *us, char *buf,
                        size_t size);
/* A signed change with one decimal and its unit ("%" or " pt"): "+2.5%",
 * "-28.0 pt"; whatever rounds to zero prints "0.0%" (never "-0.0%", which
 * sums formed in another order would otherwise give); a non-finite value
 * prints "-". Writes at most size bytes and returns buf. */
const char *cs_fmt_change(double value, const char *unit, char *buf,
                          size_t size);

#endif /* COMMSCHED_UTIL_H */
