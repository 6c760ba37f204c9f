/* commsched — the buffers' arena offsets (layout.h). */
#include "layout.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct blk {
    uint64_t off, len;
} blk;

typedef struct planner {
    blk *free;     /* free blocks below top, sorted by offset, coalesced */
    size_t n_free, cap_free;
    uint64_t top;  /* end of the used part */
    uint64_t live;
    cs_layout *l;
    uint8_t *is_live;
    const int64_t *bytes;
    uint64_t align;
} planner;

static uint64_t rounded(const planner *pl, uint32_t b)
{
    uint64_t n = (uint64_t)pl->bytes[b];
    return (n + pl->align - 1) & ~(pl->align - 1);
}

static int take(planner *pl, uint32_t b)
{
    if (pl->bytes[b] <= 0 || pl->is_live[b])
        return 0;
    uint64_t need = rounded(pl, b), at = pl->top;
    size_t i = 0;
    while (i < pl->n_free && pl->free[i].len < need)
        i++;
    if (i < pl->n_free) { /* first fit */
        at = pl->free[i].off;
        pl->free[i].off += need;
        pl->free[i].len -= need;
        if (pl->free[i].len == 0) {
            memmove(pl->free + i, pl->free + i + 1,
                    (pl->n_free - i - 1) * sizeof *pl->free);
            pl->n_free--;
        }
    } else {
        pl->top += need;
    }
    pl->l->off[b] = at;
    pl->is_live[b] = 1;
    pl->live += need;
    if (pl->top > pl->l->size)
        pl->l->size = pl->top;
    if (pl->live > pl->l->peak)
        pl->l->peak = pl->live;
    return 0;
}

static int give(planner *pl, uint32_t b)
{
    if (!pl->is_live[b])
        return 0;
    pl->is_live[b] = 0;
    uint64_t off = pl->l->off[b], len = rounded(pl, b);
    pl->live -= len;
    size_t i = 0;
    while (i < pl->n_free && pl->free[i].off < off)
        i++;
    int left = i > 0 && pl->free[i - 1].off + pl->free[i - 1].len == off;
    int right = i < pl->n_free && off + len == pl->free[i].off;
    if (left && right) {
        pl->free[i - 1].len += len + pl->free[i].len;
        memmove(pl->free + i, pl->free + i + 1,
                (pl->n_free - i - 1) * sizeof *pl->free);
        pl->n_free--;
    } else if (left) {
        pl->free[i - 1].len += len;
    } else if (right) {
        pl->free[i].off = off;
        pl->free[i].len += len;
    } else {
        if (cs_grow((void **)&pl->free, &pl->cap_free, pl->n_free + 1,
                    sizeof *pl->free) != 0)
            return -1;
        memmove(pl->free + i + 1, pl->free + i,
                (pl->n_free - i) * sizeof *pl->free);
        pl->free[i] = (blk){off, len};
        pl->n_free++;
    }
    /* A free block at the top gives the top back: later buffers extend
     * from there rather than leave it for a hole of the right size. */
    if (pl->n_free > 0 &&
        pl->free[pl->n_free - 1].off + pl->free[pl->n_free - 1].len == pl->top) {
        pl->top = pl->free[pl->n_free - 1].off;
        pl->n_free--;
    }
    return 0;
}

commsched_status cs_layout_plan(const cs_plan *p, uint64_t align,
                                cs_layout *out, commsched_error *err)
{
    uint32_t nb = p->g->n_buffers;
    memset(out, 0, sizeof *out);
    planner pl = {0};
    pl.l = out;
    pl.bytes = p->bytes;
    pl.align = align;
    out->off = cs_malloc_array(nb ? nb : 1, sizeof *out->off);
    pl.is_live = cs_calloc(nb ? nb : 1, 1);
    int rc = !out->off || !pl.is_live ? -1 : 0;
    for (uint32_t b = 0; rc == 0 && b < nb; b++)
        out->off[b] = CS_LAYOUT_NONE;
    for (uint32_t i = 0; rc == 0 && i < p->n_baseline; i++)
        rc = take(&pl, p->baseline[i]);
    for (uint32_t k = 0; rc == 0 && k < p->n; k++) {
        uint32_t v = p->order[k];
        for (uint32_t e = p->alloc_at.off[v];
             rc == 0 && e < p->alloc_at.off[v + 1]; e++)
            rc = take(&pl, p->alloc_at.idx[e]);
        for (uint32_t e = p->free_after.off[v];
             rc == 0 && e < p->free_after.off[v + 1]; e++)
            rc = give(&pl, p->free_after.idx[e]);
    }
    free(pl.free);
    free(pl.is_live);
    if (rc != 0) {
        cs_layout_free(out);
        return commsched_error_set(err, COMMSCHED_ENOMEM, NULL,
                                   "out of memory");
    }
    return COMMSCHED_OK;
}

void cs_layout_free(cs_layout *l)
{
    free(l->off);
    memset(l, 0, sizeof *l);
}
