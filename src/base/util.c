/* commsched — allocation helpers, string arena and name table.
 *
 * The name table is the loader's hot path for a million-node graph (every
 * buffer and node name goes through it twice), so it is a flat
 * open-addressing table with FNV-1a hashing and a load factor below 1/2. */
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void *cs_calloc(size_t n, size_t size)
{
    if (n == 0 || size == 0)
        return calloc(1, 1);
    if (n > SIZE_MAX / size)
        return NULL;
    return calloc(n, size);
}

void *cs_malloc_array(size_t n, size_t size)
{
    if (n == 0 || size == 0)
        return malloc(1);
    if (n > SIZE_MAX / size)
        return NULL;
    return malloc(n * size);
}

void *cs_realloc_array(void *p, size_t n, size_t size)
{
    if (n == 0 || size == 0)
        n = size = 1;
    if (n > SIZE_MAX / size)
        return NULL;
    return realloc(p, n * size);
}

int cs_grow(void **arr, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return -1;
        ncap *= 2;
    }
    void *p = cs_realloc_array(*arr, ncap, elem_size);
    if (!p)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* ---- arena ------------------------------------------------------------ */

#define ARENA_BLOCK 65536u

struct cs_arena_block {
    cs_arena_block *next;
    size_t used, cap;
    char data[];
};

void cs_arena_init(cs_arena *a) { a->head = NULL; }

void cs_arena_fini(cs_arena *a)
{
    cs_arena_block *b = a->head;
    while (b) {
        cs_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

const char *cs_arena_strdup(cs_arena *a, const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s) + 1;
    cs_arena_block *b = a->head;
    if (!b || b->cap - b->used < len) {
        size_t cap = len > ARENA_BLOCK ? len : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    char *dst = b->data + b->used;
    memcpy(dst, s, len);
    b->used += len;
    return dst;
}

/* ---- name table --------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void cs_strmap_init(cs_strmap *m, const void *base, size_t stride,
                    size_t offset)
{
    memset(m, 0, sizeof *m);
    m->base = base;
    m->stride = stride;
    m->offset = offset;
}

void cs_strmap_fini(cs_strmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

static const char *strmap_key(const cs_strmap *m, uint32_t v)
{
    const char *const *k =
        (const char *const *)(const void *)(m->base + (size_t)v * m->stride +
                                            m->offset);
    return *k;
}

static int strmap_rehash(cs_strmap *m, size_t ncap)
{
    uint32_t *slots = cs_malloc_array(ncap, sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, ncap * sizeof *slots); /* all UINT32_MAX */
    for (size_t i = 0; i < m->cap; i++) {
        if (m->slots[i] == UINT32_MAX)
            continue;
        size_t j =
            (size_t)hash_str(strmap_key(m, m->slots[i])) & (ncap - 1);
        while (slots[j] != UINT32_MAX)
            j = (j + 1) & (ncap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = ncap;
    return 0;
}

/* At most half full, so probes stay short. */
int cs_strmap_reserve(cs_strmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 64;
    while (n * 2 > cap)
        cap *= 2;
    return cap == m->cap ? 0 : strmap_rehash(m, cap);
}

int cs_strmap_put(cs_strmap *m, const char *key, uint32_t val,
                  uint32_t *existing)
{
    return cs_strmap_put_h(m, key, hash_str(key), val, existing);
}

int cs_strmap_put_h(cs_strmap *m, const char *key, uint64_t h, uint32_t val,
                    uint32_t *existing)
{
    if ((m->count + 1) * 2 > m->cap &&
        strmap_rehash(m, m->cap ? m->cap * 2 : 64) != 0)
        return -1;
    size_t j = (size_t)h & (m->cap - 1);
    while (m->slots[j] != UINT32_MAX) {
        if (strcmp(strmap_key(m, m->slots[j]), key) == 0) {
            if (existing)
                *existing = m->slots[j];
            return 0;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = val;
    m->count++;
    return 1;
}

uint32_t cs_strmap_get(const cs_strmap *m, const char *key)
{
    return cs_strmap_get_h(m, key, hash_str(key));
}

uint32_t cs_strmap_get_h(const cs_strmap *m, const char *key, uint64_t h)
{
    if (m->cap == 0)
        return UINT32_MAX;
    size_t j = (size_t)h & (m->cap - 1);
    while (m->slots[j] != UINT32_MAX) {
        if (strcmp(strmap_key(m, m->slots[j]), key) == 0)
            return m->slots[j];
        j = (j + 1) & (m->cap - 1);
    }
    return UINT32_MAX;
}

/* A hint for a later lookup of a key of hash h: stage 0 its home slot,
 * 1 the record a full home slot names, 2 that record's name. */
static void strmap_prefetch(const cs_strmap *m, uint64_t h, int stage)
{
    if (m->cap == 0)
        return;
    const uint32_t *slot = &m->slots[(size_t)h & (m->cap - 1)];
    if (stage == 0) {
        __builtin_prefetch(slot);
        return;
    }
    if (*slot == UINT32_MAX)
        return;
    const char *rec = m->base + (size_t)*slot * m->stride + m->offset;
    if (stage == 1)
        __builtin_prefetch(rec);
    else
        __builtin_prefetch(*(const char *const *)(const void *)rec);
}

void cs_strmap_pipe_push(cs_strmap_pipe *p, const cs_strmap *m,
                         const char *key)
{
    size_t i = p->n++, j;
    p->h[i % CS_STRMAP_AHEAD] = hash_str(key);
    p->m[i % CS_STRMAP_AHEAD] = m;
    strmap_prefetch(m, p->h[i % CS_STRMAP_AHEAD], 0);
    if (i >= CS_STRMAP_AHEAD / 2) {
        j = (i - CS_STRMAP_AHEAD / 2) % CS_STRMAP_AHEAD;
        strmap_prefetch(p->m[j], p->h[j], 1);
    }
    if (i >= CS_STRMAP_AHEAD * 3 / 4) {
        j = (i - CS_STRMAP_AHEAD * 3 / 4) % CS_STRMAP_AHEAD;
        strmap_prefetch(p->m[j], p->h[j], 2);
    }
}

uint64_t cs_strmap_pipe_hash(const cs_strmap_pipe *p, size_t i)
{
    assert(i < p->n && p->n <= i + CS_STRMAP_AHEAD);
    return p->h[i % CS_STRMAP_AHEAD];
}

/* ---- figures ------------------------------------------------------------ */

const char *cs_fmt_bytes(double bytes, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = fabs(bytes);
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (bytes < 0)
        v = -v;
    if (u == 0)
        snprintf(buf, size, "%.0f B", v);
    else
        snprintf(buf, size, "%.2f %s", v, units[u]);
    return buf;
}

const char *cs_fmt_time(double ns, int ms_decimals, const char *us, char *buf,
                        size_t size)
{
    double a = fabs(ns);
    if (!isfinite(ns))
        snprintf(buf, size, "-");
    else if (a >= 1e9)
        snprintf(buf, size, "%.3f s", ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, size, "%.*f ms", ms_decimals, ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, size, "%.1f %s", ns / 1e3, us);
    else
        snprintf(buf, size, "%.0f ns", ns);
    return buf;
}

const char *cs_fmt_change(double value, const char *unit, char *buf,
                          size_t size)
{
    if (!isfinite(value))
        snprintf(buf, size, "-");
    else if (value > -0.05 && value < 0.05)
        snprintf(buf, size, "0.0%s", unit);
    else
        snprintf(buf, size, "%+.1f%s", value, unit);
    return buf;
}

FILE *cs_fopen_input(const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (f && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        errno = EISDIR;
        return NULL;
    }
    return f;
}
