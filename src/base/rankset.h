/* commsched — a set of ranks 0 .. n-1 and a stable radix sort that makes
 * the ranks (base layer; not installed).
 *
 * A priority queue whose keys are all distinct and known in advance is a
 * set of ranks: sort the keys once (cs_radix_sort), give each item its
 * rank, and "the least item" is the least rank in the set. The set is a
 * bit per rank and, above it, a bit per non-empty word, up to one word:
 * insert, erase and "the least member >= i" cost O(log64 n) — a few
 * instructions where a binary heap sifts through log2 n levels — and the
 * members can be read in key order in place. The overlap pass's ready
 * sets and the heap list scheduler's (passes/heap_schedule.c) use it. */
#ifndef COMMSCHED_RANKSET_H
#define COMMSCHED_RANKSET_H

#include <stdint.h>
#include <string.h>

typedef struct cs_rankset {
    uint64_t *w;       /* every level's words, level 0 first */
    uint32_t off[7];   /* first word of each level */
    uint32_t nw[7];    /* words per level */
    uint32_t nlev, n;
} cs_rankset;

/* An empty set for ranks 0 .. n-1. Returns 0, or -1 on OOM (s then owns
 * nothing). cs_rankset_free releases it; cs_rankset_clear empties it. */
int cs_rankset_init(cs_rankset *s, uint32_t n);
void cs_rankset_clear(cs_rankset *s);
void cs_rankset_free(cs_rankset *s);

static inline void cs_rankset_add(cs_rankset *s, uint32_t i)
{
    for (uint32_t L = 0; L < s->nlev; L++) {
        uint64_t *w = &s->w[s->off[L] + (i >> 6)], old = *w;
        *w = old | (UINT64_C(1) << (i & 63));
        if (old != 0)
            return;
        i >>= 6;
    }
}

static inline void cs_rankset_remove(cs_rankset *s, uint32_t i)
{
    for (uint32_t L = 0; L < s->nlev; L++) {
        uint64_t *w = &s->w[s->off[L] + (i >> 6)];
        *w &= ~(UINT64_C(1) << (i & 63));
        if (*w != 0)
            return;
        i >>= 6;
    }
}

/* The least member >= i, or UINT32_MAX. */
static inline uint32_t cs_rankset_next(const cs_rankset *s, uint32_t i)
{
    if (i >= s->n)
        return UINT32_MAX;
    uint32_t L = 0;
    uint64_t x = i;
    for (;;) {
        uint64_t wi = x >> 6;
        if (wi >= s->nw[L])
            return UINT32_MAX;
        uint64_t w = s->w[s->off[L] + wi] & (~UINT64_C(0) << (x & 63));
        if (w != 0) {
            x = (wi << 6) | (uint64_t)__builtin_ctzll(w);
            break;
        }
        if (++L == s->nlev)
            return UINT32_MAX;
        x = wi + 1;
    }
    while (L-- > 0)
        x = (x << 6) | (uint64_t)__builtin_ctzll(s->w[s->off[L] + x]);
    return (uint32_t)x;
}

/* A radix key for a non-negative double (finite or +inf, not -0.0): its
 * bits order as its value does. ~ of it sorts largest first. */
static inline uint64_t cs_radix_key(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Sorts idx[0 .. n) stably by key[idx[i]] ascending: least significant
 * byte first, a counting pass per byte, skipping the bytes every key
 * shares. tmp: n entries of scratch. */
void cs_radix_sort(uint32_t *idx, uint32_t *tmp, uint32_t n,
                   const uint64_t *key);

#endif /* COMMSCHED_RANKSET_H */
