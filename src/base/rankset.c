/* commsched — rank sets and the radix sort that makes ranks (rankset.h). */
#include "rankset.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int cs_rankset_init(cs_rankset *s, uint32_t n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    uint32_t words = 0, m = n ? n : 1;
    do {
        m = (m + 63) / 64;
        s->off[s->nlev] = words;
        s->nw[s->nlev++] = m;
        words += m;
    } while (m > 1);
    s->w = cs_calloc(words, sizeof *s->w);
    return s->w ? 0 : -1;
}

void cs_rankset_clear(cs_rankset *s)
{
    memset(s->w, 0,
           (size_t)(s->off[s->nlev - 1] + s->nw[s->nlev - 1]) * sizeof *s->w);
}

void cs_rankset_free(cs_rankset *s)
{
    free(s->w);
    s->w = NULL;
}

void cs_radix_sort(uint32_t *idx, uint32_t *tmp, uint32_t n,
                   const uint64_t *key)
{
    uint64_t all_or = 0, all_and = ~UINT64_C(0);
    for (uint32_t i = 0; i < n; i++) {
        all_or |= key[idx[i]];
        all_and &= key[idx[i]];
    }
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
            continue; /* one digit for all: the pass would keep the order */
        uint32_t count[257] = {0};
        for (uint32_t i = 0; i < n; i++)
            count[((key[idx[i]] >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (uint32_t i = 0; i < n; i++)
            tmp[count[(key[idx[i]] >> shift) & 0xff]++] = idx[i];
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}
