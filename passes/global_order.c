/* commsched — decide_global_ordering_of_comms: fake edges chaining each
 * collective to the previous one in the current order, so every rank
 * issues them in one order (the seed's WeakDep(is_fake=True) chain).
 *
 * Fake edges that the current order already violates (an iterative pass
 * may break them, as Inductor's do) are dropped first: keeping them beside
 * the new chain could close a cycle and leave no valid order. */
#include <stdlib.h>

#include "passes_internal.h"

commsched_status cs_pass_decide_global_ordering(cs_pass_ctx *ctx)
{
    commsched_graph *g = ctx->g;
    uint32_t n = g->n_nodes;
    uint32_t *pos = cs_malloc_array(n, sizeof *pos);
    uint32_t *prev_coll = cs_malloc_array(n, sizeof *prev_coll);
    uint32_t *rows = NULL, *vals = NULL;
    cs_csr fake = {0};
    commsched_status st = COMMSCHED_OK;
    size_t m = g->after_fake.off[n] + n, k = 0;
    rows = cs_malloc_array(m, sizeof *rows);
    vals = cs_malloc_array(m, sizeof *vals);
    if (!pos || !prev_coll || !rows || !vals)
        goto oom;
    uint32_t p = 0, last = COMMSCHED_NONE;
    for (uint32_t v = commsched_schedule_first(ctx->s); v != COMMSCHED_NONE;
         v = commsched_schedule_next(ctx->s, v)) {
        pos[v] = p++;
        prev_coll[v] = COMMSCHED_NONE;
        if (cs_is_collective(g, v)) {
            prev_coll[v] = last;
            last = v;
        }
    }
    uint32_t added = 0;
    for (uint32_t v = 0; v < n; v++) {
        int has_chain_edge = 0;
        for (uint32_t e = g->after_fake.off[v]; e < g->after_fake.off[v + 1];
             e++) {
            uint32_t d = g->after_fake.idx[e];
            if (pos[d] > pos[v])
                continue; /* violated: dropped */
            has_chain_edge |= d == prev_coll[v];
            rows[k] = v;
            vals[k++] = d;
        }
        if (prev_coll[v] != COMMSCHED_NONE && !has_chain_edge) {
            rows[k] = v;
            vals[k++] = prev_coll[v];
            added++;
        }
    }
    if (cs_csr_from_pairs(&fake, n, rows, vals, k) != 0 ||
        cs_graph_set_fake_edges(g, &fake) != 0)
        goto oom;
    ctx->rec->pub.fake_edges_added = added;
    goto cleanup;
oom:
    st = commsched_error_set(ctx->err, COMMSCHED_ENOMEM, NULL,
                             "out of memory");
cleanup:
    cs_csr_free(&fake);
    free(pos);
    free(prev_coll);
    free(rows);
    free(vals);
    return st;
}
