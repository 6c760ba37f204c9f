/* commsched unit tests — the memory model (docs/FORMAT.md "Memory model (in brief)") and its
 * incremental tracking under moves. Every expected number below is derived
 * by hand in the comments, from the rules:
 *   cur starts at the baseline (freeable inputs that are read);
 *   per node: cur += size_alloc; post_alloc = cur; cur -= size_free;
 *   post_free = cur; a buffer is freed at its last reader (through any
 *   alias), by its producer when nobody reads it, never when it is on a
 *   graph output's alias chain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commsched/memory.h"
#include "commsched/schedule.h"
#include "graph_internal.h"
#include "testutil.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "

typedef struct fixture {
    commsched_graph *g;
    commsched_schedule *s;
    commsched_memory *m;
} fixture;

static void open_fixture(fixture *f, const char *json, const uint32_t *order)
{
    commsched_error err = {0};
    f->g = tu_graph_from_json(json);
    assert_int_equal(commsched_schedule_create(f->g, order, &f->s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(f->s, &f->m, &err),
                     COMMSCHED_OK);
}

static void close_fixture(fixture *f)
{
    commsched_memory_destroy(f->m);
    commsched_schedule_destroy(f->s);
    commsched_graph_destroy(f->g);
}

/* Asserts one node's four numbers. */
static void expect_node(const fixture *f, const char *name, int64_t alloc,
                        int64_t fr, int64_t post_alloc, int64_t post_free)
{
    commsched_node_memory nm =
        commsched_memory_node(f->m, tu_node(f->g, name));
    if (nm.size_alloc != alloc || nm.size_free != fr ||
        nm.post_alloc != post_alloc || nm.post_free != post_free)
        fail_msg("node %s: got alloc %lld free %lld post_alloc %lld "
                 "post_free %lld, want %lld %lld %lld %lld",
                 name, (long long)nm.size_alloc, (long long)nm.size_free,
                 (long long)nm.post_alloc, (long long)nm.post_free,
                 (long long)alloc, (long long)fr, (long long)post_alloc,
                 (long long)post_free);
}

/* Asserts the last-use node of a buffer (NULL: never freed / not counted). */
static void expect_last_use(const fixture *f, const char *buffer,
                            const char *node)
{
    uint32_t lu = commsched_memory_last_use(f->m, tu_buffer(f->g, buffer));
    if (!node) {
        if (lu != COMMSCHED_NONE)
            fail_msg("buffer %s: last use %s, want none", buffer,
                     commsched_graph_node_name(f->g, lu));
        return;
    }
    if (lu == COMMSCHED_NONE)
        fail_msg("buffer %s: no last use, want %s", buffer, node);
    assert_string_equal(commsched_graph_node_name(f->g, lu), node);
}

static void expect_peak(const fixture *f, int64_t peak, const char *at)
{
    uint32_t at_node = COMMSCHED_NONE;
    assert_int_equal(commsched_memory_peak(f->m, f->s, &at_node), peak);
    assert_int_not_equal(at_node, COMMSCHED_NONE);
    assert_string_equal(commsched_graph_node_name(f->g, at_node), at);
}

static void expect_verified(const fixture *f)
{
    commsched_error err = {0};
    commsched_status st = commsched_memory_verify(f->m, f->s, &err);
    if (st != COMMSCHED_OK)
        fail_msg("verify: %s", err.text);
}

/* ---- static estimates ---------------------------------------------------- */

/* Freeable vs non-freeable inputs, and an unread buffer freed by its
 * producer. Inputs: a 100 freeable (read), b 1000 non-freeable (read),
 * c 10 freeable (unread).
 *   baseline = 100 (a only: b is non-freeable, c is never read)
 *   n0 reads a,b -> x 50:      alloc 50, post_alloc 150; frees a (last
 *                              reader) 100 -> post_free 50
 *   n1 reads x -> y 20, s 1000: alloc 1020, post_alloc 1070; frees x 50
 *                              and s 1000 (nobody reads s) -> post_free 20
 *                              (y is a graph output: never freed)
 *   peak 1070 at n1. */
static void test_memory_freeable_inputs_and_unread_buffers(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 "\"inputs\": [{\"name\": \"a\", \"size\": 100, \"freeable\": "
                 "true}, {\"name\": \"b\", \"size\": 1000}, {\"name\": \"c\", "
                 "\"size\": 10, \"freeable\": true}],"
                 "\"outputs\": [\"y\"],"
                 "\"nodes\": ["
                 "{\"name\": \"n0\", \"kind\": \"compute\", \"inputs\": [\"a\", "
                 "\"b\"], \"outputs\": [{\"name\": \"x\", \"size\": 50}]},"
                 "{\"name\": \"n1\", \"kind\": \"compute\", \"inputs\": "
                 "[\"x\"], \"outputs\": [{\"name\": \"y\", \"size\": 20}, "
                 "{\"name\": \"s\", \"size\": 1000}]}]}",
                 NULL);
    assert_int_equal(commsched_memory_baseline(f.m), 100);
    expect_node(&f, "n0", 50, 100, 150, 50);
    expect_node(&f, "n1", 1020, 1050, 1070, 20);
    expect_peak(&f, 1070, "n1");
    expect_last_use(&f, "a", "n0");
    expect_last_use(&f, "b", NULL);
    expect_last_use(&f, "c", NULL);
    expect_last_use(&f, "x", "n1");
    expect_last_use(&f, "s", "n1"); /* freed by its producer */
    expect_last_use(&f, "y", NULL);
    expect_verified(&f);
    close_fixture(&f);
}

/* A wait's alias extends the collective output's life to the alias's last
 * reader. w 64 non-freeable: baseline 0.
 *   pre  -> g 100:           alloc 100, post 100/100 (g read by ag)
 *   ag   reads g -> ag 400:  alloc 400, post_alloc 500; frees g -> 400
 *   mid  reads w -> m 30:    430/430
 *   agw  reads ag -> wa alias: alloc 0, 430/430 (ag still read via wa)
 *   use1 reads wa,m -> u 10: 440; frees m 30 and u 10 (unread) -> 400
 *   use2 reads wa -> v 5:    405; frees ag 400 (last reader of the alias);
 *                            v is an output -> 5
 *   peak 500 at ag. */
static void test_memory_wait_alias_extends_collective_output(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 "\"groups\": [{\"name\": \"dp\", \"size\": 4}],"
                 "\"inputs\": [{\"name\": \"w\", \"size\": 64}],"
                 "\"outputs\": [\"v\"],"
                 "\"nodes\": ["
                 "{\"name\": \"pre\", \"kind\": \"compute\", \"inputs\": "
                 "[\"w\"], \"outputs\": [{\"name\": \"g\", \"size\": 100}]},"
                 "{\"name\": \"ag\", \"kind\": \"collective\", \"op\": "
                 "\"all_gather\", \"group\": \"dp\", \"inputs\": [\"g\"], "
                 "\"outputs\": [{\"name\": \"ag_out\", \"size\": 400}]},"
                 "{\"name\": \"mid\", \"kind\": \"compute\", \"inputs\": "
                 "[\"w\"], \"outputs\": [{\"name\": \"m\", \"size\": 30}]},"
                 "{\"name\": \"agw\", \"kind\": \"wait\", \"inputs\": "
                 "[\"ag_out\"], \"outputs\": [{\"name\": \"wa\", \"alias_of\": "
                 "\"ag_out\"}]},"
                 "{\"name\": \"use1\", \"kind\": \"compute\", \"inputs\": "
                 "[\"wa\", \"m\"], \"outputs\": [{\"name\": \"u\", \"size\": "
                 "10}]},"
                 "{\"name\": \"use2\", \"kind\": \"compute\", \"inputs\": "
                 "[\"wa\"], \"outputs\": [{\"name\": \"v\", \"size\": 5}]}]}",
                 NULL);
    assert_int_equal(commsched_memory_baseline(f.m), 0);
    expect_node(&f, "pre", 100, 0, 100, 100);
    expect_node(&f, "ag", 400, 100, 500, 400);
    expect_node(&f, "mid", 30, 0, 430, 430);
    expect_node(&f, "agw", 0, 0, 430, 430);
    expect_node(&f, "use1", 10, 40, 440, 400);
    expect_node(&f, "use2", 5, 400, 405, 5);
    expect_peak(&f, 500, "ag");
    expect_last_use(&f, "ag_out", "use2");
    expect_last_use(&f, "wa", NULL); /* an alias: its root carries it */
    expect_last_use(&f, "g", "ag");
    expect_last_use(&f, "w", NULL);
    expect_last_use(&f, "u", "use1");
    expect_verified(&f);
    close_fixture(&f);
}

/* An in-place all_reduce allocates nothing and extends its input's life.
 *   grad -> gr 200:             200/200 (gr read by ar, arw, opt)
 *   ar reads gr -> alias:       alloc 0, 200/200
 *   other -> o 50:              250/250
 *   arw reads ar_out -> alias:  250/250
 *   opt reads arw,o -> p 1:     251; frees gr 200 + o 50 -> 1 (p output)
 *   peak 251 at opt. */
static void test_memory_inplace_all_reduce_extends_input(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 "\"groups\": [{\"name\": \"dp\", \"size\": 8, \"hosts\": 2}],"
                 "\"outputs\": [\"p\"],"
                 "\"nodes\": ["
                 "{\"name\": \"grad\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"gr\", \"size\": 200}]},"
                 "{\"name\": \"ar\", \"kind\": \"collective\", \"op\": "
                 "\"all_reduce\", \"group\": \"dp\", \"inputs\": [\"gr\"], "
                 "\"outputs\": [{\"name\": \"ar_out\", \"alias_of\": \"gr\"}]},"
                 "{\"name\": \"other\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"o\", \"size\": 50}]},"
                 "{\"name\": \"arw\", \"kind\": \"wait\", \"inputs\": "
                 "[\"ar_out\"], \"outputs\": [{\"name\": \"arw_out\", "
                 "\"alias_of\": \"ar_out\"}]},"
                 "{\"name\": \"opt\", \"kind\": \"compute\", \"inputs\": "
                 "[\"arw_out\", \"o\"], \"outputs\": [{\"name\": \"p\", "
                 "\"size\": 1}]}]}",
                 NULL);
    assert_int_equal(commsched_memory_baseline(f.m), 0);
    expect_node(&f, "grad", 200, 0, 200, 200);
    expect_node(&f, "ar", 0, 0, 200, 200);
    expect_node(&f, "other", 50, 0, 250, 250);
    expect_node(&f, "arw", 0, 0, 250, 250);
    expect_node(&f, "opt", 1, 250, 251, 1);
    expect_peak(&f, 251, "opt");
    expect_last_use(&f, "gr", "opt");
    expect_last_use(&f, "ar_out", NULL);
    expect_last_use(&f, "arw_out", NULL);
    expect_verified(&f);
    close_fixture(&f);
}

/* Graph outputs are never freed, and neither is the collective buffer
 * whose wait alias is a graph output. Input i 30 freeable, also an output.
 *   baseline 30 (freeable and read; never freed: it is an output)
 *   mk reads i -> x 100:        130/130 (x freed at rs)
 *   rs reads x -> rs_out 25:    155; frees x 100 -> 55
 *   rsw reads rs_out -> alias:  55/55
 *   tail reads rsw -> z 7:      62; rs_out is kept (rsw is an output),
 *                               z is an output and unread: kept -> 62
 *   peak 155 at rs. */
static void test_memory_graph_outputs_never_freed(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 /* 4 ranks: rs scatters x's 100 bytes into 25 each */
                 "\"groups\": [{\"name\": \"dp\", \"size\": 4}],"
                 "\"inputs\": [{\"name\": \"i\", \"size\": 30, \"freeable\": "
                 "true}],"
                 "\"outputs\": [\"rsw_out\", \"z\", \"i\"],"
                 "\"nodes\": ["
                 "{\"name\": \"mk\", \"kind\": \"compute\", \"inputs\": "
                 "[\"i\"], \"outputs\": [{\"name\": \"x\", \"size\": 100}]},"
                 "{\"name\": \"rs\", \"kind\": \"collective\", \"op\": "
                 "\"reduce_scatter\", \"group\": \"dp\", \"inputs\": [\"x\"], "
                 "\"outputs\": [{\"name\": \"rs_out\", \"size\": 25}]},"
                 "{\"name\": \"rsw\", \"kind\": \"wait\", \"inputs\": "
                 "[\"rs_out\"], \"outputs\": [{\"name\": \"rsw_out\", "
                 "\"alias_of\": \"rs_out\"}]},"
                 "{\"name\": \"tail\", \"kind\": \"compute\", \"inputs\": "
                 "[\"rsw_out\"], \"outputs\": [{\"name\": \"z\", \"size\": "
                 "7}]}]}",
                 NULL);
    assert_int_equal(commsched_memory_baseline(f.m), 30);
    expect_node(&f, "mk", 100, 0, 130, 130);
    expect_node(&f, "rs", 25, 100, 155, 55);
    expect_node(&f, "rsw", 0, 0, 55, 55);
    expect_node(&f, "tail", 7, 0, 62, 62);
    expect_peak(&f, 155, "rs");
    expect_last_use(&f, "rs_out", NULL);
    expect_last_use(&f, "z", NULL);
    expect_last_use(&f, "i", NULL);
    expect_last_use(&f, "x", "rs");
    expect_verified(&f);
    close_fixture(&f);
}

/* The peak node is the first node reaching the peak; a chain of views
 * across three nodes (r3 -> r2 -> r1 -> r) still counts as reads of r.
 *   baseline 0
 *   a -> r 10:                     10/10 (r last read by end, via r3)
 *   v1 reads r -> r1 alias:        10/10
 *   big -> t 5 (unread):           15, frees t 5 -> 10
 *   v2 reads r1 -> r2 alias, q 5:  15/15
 *   v3 reads r2 -> r3 alias:       15/15
 *   end reads r3, q:               alloc 0, 15; frees r 10 + q 5 -> 0
 *   peak 15, first reached at big (v2, v3 and end reach it later). */
static void test_memory_peak_is_first_node_and_alias_chains(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 "\"nodes\": ["
                 "{\"name\": \"a\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"r\", \"size\": 10}]},"
                 "{\"name\": \"v1\", \"kind\": \"compute\", \"inputs\": "
                 "[\"r\"], \"outputs\": [{\"name\": \"r1\", \"alias_of\": "
                 "\"r\"}]},"
                 "{\"name\": \"big\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"t\", \"size\": 5}]},"
                 "{\"name\": \"v2\", \"kind\": \"compute\", \"inputs\": "
                 "[\"r1\"], \"outputs\": [{\"name\": \"r2\", \"alias_of\": "
                 "\"r1\"}, {\"name\": \"q\", \"size\": 5}]},"
                 "{\"name\": \"v3\", \"kind\": \"compute\", \"inputs\": "
                 "[\"r2\"], \"outputs\": [{\"name\": \"r3\", \"alias_of\": "
                 "\"r2\"}]},"
                 "{\"name\": \"end\", \"kind\": \"compute\", \"inputs\": "
                 "[\"r3\", \"q\"]}]}",
                 NULL);
    expect_node(&f, "a", 10, 0, 10, 10);
    expect_node(&f, "v1", 0, 0, 10, 10);
    expect_node(&f, "big", 5, 5, 15, 10);
    expect_node(&f, "v2", 5, 0, 15, 15);
    expect_node(&f, "v3", 0, 0, 15, 15);
    expect_node(&f, "end", 0, 15, 15, 0);
    expect_peak(&f, 15, "big");
    expect_last_use(&f, "r", "end");
    expect_last_use(&f, "t", "big");
    expect_verified(&f);
    close_fixture(&f);
}

/* An independent oracle for docs/FORMAT.md "Memory model (in brief)", from the graph as written
 * (reads, alias_of, outputs), not the library's derived tables. */
static void oracle(const commsched_graph *g, const uint32_t *order,
                   int64_t *base, int64_t *alloc, int64_t *fr, int64_t *pa,
                   int64_t *pf, uint32_t *last)
{
    uint32_t n = g->n_nodes, nb = g->n_buffers;
    uint32_t *pos = malloc(n * sizeof *pos);
    uint32_t *last_reader = malloc(nb * sizeof *last_reader);
    uint8_t *keep = calloc(nb, 1);
    assert_non_null(pos);
    assert_non_null(last_reader);
    assert_non_null(keep);
    for (uint32_t k = 0; k < n; k++)
        pos[order[k]] = k;
    for (uint32_t b = 0; b < nb; b++) {
        last_reader[b] = COMMSCHED_NONE;
        last[b] = COMMSCHED_NONE;
    }
    for (uint32_t i = 0; i < g->n_outputs; i++)
        for (uint32_t c = g->outputs[i]; c != COMMSCHED_NONE;
             c = g->buffers[c].alias_of)
            keep[c] = 1;
    for (uint32_t v = 0; v < n; v++)
        for (uint32_t k = g->reads.off[v]; k < g->reads.off[v + 1]; k++) {
            uint32_t r = g->reads.idx[k];
            while (g->buffers[r].alias_of != COMMSCHED_NONE)
                r = g->buffers[r].alias_of;
            if (last_reader[r] == COMMSCHED_NONE ||
                pos[v] > pos[last_reader[r]])
                last_reader[r] = v;
        }
    memset(alloc, 0, n * sizeof *alloc);
    memset(fr, 0, n * sizeof *fr);
    *base = 0;
    for (uint32_t b = 0; b < nb; b++) {
        const cs_buffer *x = &g->buffers[b];
        if (x->alias_of != COMMSCHED_NONE)
            continue;
        if (x->is_input) {
            if (!x->freeable || last_reader[b] == COMMSCHED_NONE)
                continue;
            *base += x->size;
        } else {
            alloc[x->producer] += x->size;
        }
        if (keep[b])
            continue;
        uint32_t f = last_reader[b] != COMMSCHED_NONE ? last_reader[b]
                                                      : x->producer;
        fr[f] += x->size;
        last[b] = f;
    }
    int64_t cur = *base;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t v = order[k];
        cur += alloc[v];
        pa[v] = cur;
        cur -= fr[v];
        pf[v] = cur;
    }
    free(pos);
    free(last_reader);
    free(keep);
}

static void test_memory_matches_oracle_on_random_orders(void **state)
{
    (void)state;
    unsigned checked = 0;
    for (uint64_t seed = 50; seed < 58; seed++) {
        tu_graph_opts o = tu_random_opts(200);
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = g->n_nodes, nb = g->n_buffers;
        uint32_t *order = malloc(n * sizeof *order);
        int64_t *a = malloc(n * sizeof *a), *f = malloc(n * sizeof *f);
        int64_t *pa = malloc(n * sizeof *pa), *pf = malloc(n * sizeof *pf);
        uint32_t *last = malloc(nb * sizeof *last);
        assert_true(order && a && f && pa && pf && last);
        for (int rep = 0; rep < 5; rep++) {
            tu_random_topo_order(g, seed * 31 + (uint64_t)rep, 0, order);
            int64_t base;
            oracle(g, order, &base, a, f, pa, pf, last);
            commsched_schedule *s = NULL;
            commsched_memory *m = NULL;
            commsched_error err = {0};
            assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                             COMMSCHED_OK);
            assert_int_equal(commsched_memory_create(s, &m, &err),
                             COMMSCHED_OK);
            assert_int_equal(commsched_memory_baseline(m), base);
            int64_t peak = base;
            for (uint32_t v = 0; v < n; v++) {
                commsched_node_memory nm = commsched_memory_node(m, v);
                if (nm.size_alloc != a[v] || nm.size_free != f[v] ||
                    nm.post_alloc != pa[v] || nm.post_free != pf[v])
                    fail_msg("seed %llu node %s: %lld %lld %lld %lld, oracle "
                             "%lld %lld %lld %lld",
                             (unsigned long long)seed, g->nodes[v].name,
                             (long long)nm.size_alloc, (long long)nm.size_free,
                             (long long)nm.post_alloc, (long long)nm.post_free,
                             (long long)a[v], (long long)f[v],
                             (long long)pa[v], (long long)pf[v]);
                if (pa[v] > peak)
                    peak = pa[v];
            }
            for (uint32_t b = 0; b < nb; b++)
                if (commsched_memory_last_use(m, b) != last[b])
                    fail_msg("seed %llu buffer %s: last use differs",
                             (unsigned long long)seed, g->buffers[b].name);
            assert_int_equal(commsched_memory_peak(m, s, NULL), peak);
            commsched_memory_destroy(m);
            commsched_schedule_destroy(s);
            checked++;
        }
        free(order);
        free(a);
        free(f);
        free(pa);
        free(pf);
        free(last);
        commsched_graph_destroy(g);
    }
    assert_int_equal(checked, 40);
}

/* ---- hand-computed moves ------------------------------------------------- */

/* Graph M. Input a 1000 freeable.
 *   A reads a -> x 100; B reads a -> y 10; C reads x -> z 1;
 *   D reads y, z -> out 2 (output).
 * Order A B C D, baseline 1000:
 *   A: 1100/1100   B: 1110, frees a -> 110   C: 111, frees x -> 11
 *   D: 13, frees y, z -> 2.   Peak 1110 at B. */
static const char graph_m[] =
    HDR "\"inputs\": [{\"name\": \"a\", \"size\": 1000, \"freeable\": true}],"
        "\"outputs\": [\"out\"],"
        "\"nodes\": ["
        "{\"name\": \"A\", \"kind\": \"compute\", \"inputs\": [\"a\"], "
        "\"outputs\": [{\"name\": \"x\", \"size\": 100}]},"
        "{\"name\": \"B\", \"kind\": \"compute\", \"inputs\": [\"a\"], "
        "\"outputs\": [{\"name\": \"y\", \"size\": 10}]},"
        "{\"name\": \"C\", \"kind\": \"compute\", \"inputs\": [\"x\"], "
        "\"outputs\": [{\"name\": \"z\", \"size\": 1}]},"
        "{\"name\": \"D\", \"kind\": \"compute\", \"inputs\": [\"y\", \"z\"], "
        "\"outputs\": [{\"name\": \"out\", \"size\": 2}]}]}";

static int64_t plan(fixture *f, commsched_move dir, const char *cand,
                    const char *head, const char *tail)
{
    int64_t peak = -1;
    commsched_error err = {0};
    assert_int_equal(commsched_memory_plan_move(f->m, f->s, dir,
                                                tu_node(f->g, cand),
                                                tu_node(f->g, head),
                                                tu_node(f->g, tail), &peak,
                                                &err),
                     COMMSCHED_OK);
    return peak;
}

static void expect_order(const fixture *f, const char *const *names)
{
    uint32_t v = commsched_schedule_first(f->s);
    for (size_t k = 0; names[k]; k++) {
        assert_int_not_equal(v, COMMSCHED_NONE);
        assert_string_equal(commsched_graph_node_name(f->g, v), names[k]);
        v = commsched_schedule_next(f->s, v);
    }
    assert_int_equal(v, COMMSCHED_NONE);
}

/* AFTER_GROUP moving the FIRST node, with a last-use change: A jumps after
 * [B]. New order B A C D:
 *   B: 1000 + 10 = 1010; a is now last read by A, so B frees nothing: 1010
 *   A: 1010 + 100 = 1110; frees a 1000 -> 110
 *   C, D unchanged (111/11, 13/2).
 * potential peak = max(1010, 1110) = 1110. The baseline (1000) stays
 * charged to no node: were it charged to the first node (the seed), A would
 * carry it to its new place. */
static void test_memory_move_after_first_node_last_use_changes(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, graph_m, NULL);
    expect_node(&f, "A", 100, 0, 1100, 1100);
    expect_node(&f, "B", 10, 1000, 1110, 110);
    expect_last_use(&f, "a", "B");
    assert_int_equal(plan(&f, COMMSCHED_MOVE_AFTER_GROUP, "A", "B", "B"),
                     1110);
    /* planning changes nothing */
    expect_node(&f, "A", 100, 0, 1100, 1100);
    expect_verified(&f);
    commsched_memory_commit_move(f.m, f.s);
    static const char *const order[] = {"B", "A", "C", "D", NULL};
    expect_order(&f, order);
    assert_int_equal(commsched_memory_baseline(f.m), 1000);
    expect_node(&f, "B", 10, 0, 1010, 1010);
    expect_node(&f, "A", 100, 1000, 1110, 110);
    expect_node(&f, "C", 1, 100, 111, 11);
    expect_node(&f, "D", 2, 11, 13, 2);
    expect_last_use(&f, "a", "A");
    expect_peak(&f, 1110, "A");
    expect_verified(&f);
    close_fixture(&f);
}

/* AFTER_GROUP without a last-use change: B jumps after [C]. New order
 * A C B D:
 *   A: 1100/1100 (a is still last read by B, which stays after A)
 *   C: 1101, frees x 100 -> 1001
 *   B: 1011, frees a 1000 -> 11
 *   D: 13/2.
 * potential peak = max(1101, 1011) = 1101. */
static void test_memory_move_after_no_last_use_change(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, graph_m, NULL);
    /* a plan is only a price: a later plan replaces it (A after [B] would
     * cost 1110, see above) */
    assert_int_equal(plan(&f, COMMSCHED_MOVE_AFTER_GROUP, "A", "B", "B"),
                     1110);
    assert_int_equal(plan(&f, COMMSCHED_MOVE_AFTER_GROUP, "B", "C", "C"),
                     1101);
    commsched_memory_commit_move(f.m, f.s);
    static const char *const order[] = {"A", "C", "B", "D", NULL};
    expect_order(&f, order);
    expect_node(&f, "A", 100, 0, 1100, 1100);
    expect_node(&f, "C", 1, 100, 1101, 1001);
    expect_node(&f, "B", 10, 1000, 1011, 11);
    expect_node(&f, "D", 2, 11, 13, 2);
    expect_last_use(&f, "a", "B");
    expect_peak(&f, 1101, "C");
    expect_verified(&f);
    close_fixture(&f);
}

/* BEFORE_GROUP (sink) with a last-use change: B sinks before [A], which is
 * the first node. B is the last reader of a; after the move A is, so the
 * last-use map must move a to A (the seed forgets this). New order
 * B A C D:
 *   B: 1010/1010   A: 1110, frees a -> 110   C 111/11   D 13/2
 * potential peak = max(1010, 1110) = 1110. */
static void test_memory_move_before_updates_last_use(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, graph_m, NULL);
    assert_int_equal(plan(&f, COMMSCHED_MOVE_BEFORE_GROUP, "B", "A", "A"),
                     1110);
    commsched_memory_commit_move(f.m, f.s);
    static const char *const order[] = {"B", "A", "C", "D", NULL};
    expect_order(&f, order);
    expect_last_use(&f, "a", "A");
    expect_node(&f, "B", 10, 0, 1010, 1010);
    expect_node(&f, "A", 100, 1000, 1110, 110);
    expect_node(&f, "C", 1, 100, 111, 11);
    expect_peak(&f, 1110, "A");
    expect_verified(&f);
    /* And back: B after [A] (AFTER_GROUP) restores A B C D, handing a
     * back to B:  A 1100/1100, B 1110/110; potential = 1110. */
    assert_int_equal(plan(&f, COMMSCHED_MOVE_AFTER_GROUP, "B", "A", "A"),
                     1110);
    commsched_memory_commit_move(f.m, f.s);
    expect_last_use(&f, "a", "B");
    expect_node(&f, "A", 100, 0, 1100, 1100);
    expect_node(&f, "B", 10, 1000, 1110, 110);
    expect_verified(&f);
    close_fixture(&f);
}

/* BEFORE_GROUP without a last-use change: start from A C B D and sink B
 * before [C]. C does not read a, so a stays last used by B. New order
 * A B C D (the original levels):
 *   B: 1100 + 10 = 1110, frees a -> 110;  C: 111, frees x -> 11
 * potential peak = max(1110, 111) = 1110. */
static void test_memory_move_before_no_last_use_change(void **state)
{
    (void)state;
    fixture f;
    /* node indices: A 0, B 1, C 2, D 3 */
    static const uint32_t acbd[] = {0, 2, 1, 3};
    open_fixture(&f, graph_m, acbd);
    expect_node(&f, "C", 1, 100, 1101, 1001);
    assert_int_equal(plan(&f, COMMSCHED_MOVE_BEFORE_GROUP, "B", "C", "C"),
                     1110);
    commsched_memory_commit_move(f.m, f.s);
    static const char *const order[] = {"A", "B", "C", "D", NULL};
    expect_order(&f, order);
    expect_node(&f, "B", 10, 1000, 1110, 110);
    expect_node(&f, "C", 1, 100, 111, 11);
    expect_last_use(&f, "a", "B");
    expect_verified(&f);
    close_fixture(&f);
}

/* Graph N: inputs p 500, q 300 (both freeable): baseline 800.
 *   K reads p, q -> k 40; G1 reads q -> g1 5; G2 reads p -> g2 7;
 *   G3 -> g3 11; T reads k, g1, g2, g3 -> t 1 (output).
 * Order K G1 G2 G3 T:
 *   K 840/840; G1 845, frees q 300 -> 545; G2 552, frees p 500 -> 52;
 *   G3 63/63; T 64, frees 40+5+7+11 -> 1.   Peak 845 at G1.
 * Move K after [G1 G2 G3]: q and p become last used by K (from G1, G2 in
 * the middle of the group). New order G1 G2 G3 K T:
 *   G1 805/805; G2 812/812; G3 823/823; K 863, frees 800 -> 63; T 64/1.
 * potential peak 863. Then sink K back before the same group: last uses
 * return to G1 (q) and G2 (p); potential = max(840, 845, 552, 63) = 845. */
static void test_memory_move_group_of_three_round_trip(void **state)
{
    (void)state;
    fixture f;
    open_fixture(
        &f,
        HDR "\"inputs\": [{\"name\": \"p\", \"size\": 500, \"freeable\": true},"
            "{\"name\": \"q\", \"size\": 300, \"freeable\": true}],"
            "\"outputs\": [\"t\"],"
            "\"nodes\": ["
            "{\"name\": \"K\", \"kind\": \"compute\", \"inputs\": [\"p\", "
            "\"q\"], \"outputs\": [{\"name\": \"k\", \"size\": 40}]},"
            "{\"name\": \"G1\", \"kind\": \"compute\", \"inputs\": [\"q\"], "
            "\"outputs\": [{\"name\": \"g1\", \"size\": 5}]},"
            "{\"name\": \"G2\", \"kind\": \"compute\", \"inputs\": [\"p\"], "
            "\"outputs\": [{\"name\": \"g2\", \"size\": 7}]},"
            "{\"name\": \"G3\", \"kind\": \"compute\", "
            "\"outputs\": [{\"name\": \"g3\", \"size\": 11}]},"
            "{\"name\": \"T\", \"kind\": \"compute\", \"inputs\": [\"k\", "
            "\"g1\", \"g2\", \"g3\"], \"outputs\": [{\"name\": \"t\", "
            "\"size\": 1}]}]}",
        NULL);
    assert_int_equal(commsched_memory_baseline(f.m), 800);
    expect_node(&f, "K", 40, 0, 840, 840);
    expect_node(&f, "G1", 5, 300, 845, 545);
    expect_node(&f, "G2", 7, 500, 552, 52);
    expect_node(&f, "G3", 11, 0, 63, 63);
    expect_node(&f, "T", 1, 63, 64, 1);
    expect_peak(&f, 845, "G1");

    assert_int_equal(plan(&f, COMMSCHED_MOVE_AFTER_GROUP, "K", "G1", "G3"),
                     863);
    commsched_memory_commit_move(f.m, f.s);
    static const char *const moved[] = {"G1", "G2", "G3", "K", "T", NULL};
    expect_order(&f, moved);
    expect_node(&f, "G1", 5, 0, 805, 805);
    expect_node(&f, "G2", 7, 0, 812, 812);
    expect_node(&f, "G3", 11, 0, 823, 823);
    expect_node(&f, "K", 40, 800, 863, 63);
    expect_node(&f, "T", 1, 63, 64, 1);
    expect_last_use(&f, "p", "K");
    expect_last_use(&f, "q", "K");
    expect_peak(&f, 863, "K");
    expect_verified(&f);

    assert_int_equal(plan(&f, COMMSCHED_MOVE_BEFORE_GROUP, "K", "G1", "G3"),
                     845);
    commsched_memory_commit_move(f.m, f.s);
    static const char *const back[] = {"K", "G1", "G2", "G3", "T", NULL};
    expect_order(&f, back);
    expect_node(&f, "K", 40, 0, 840, 840);
    expect_node(&f, "G1", 5, 300, 845, 545);
    expect_node(&f, "G2", 7, 500, 552, 52);
    expect_node(&f, "G3", 11, 0, 63, 63);
    expect_last_use(&f, "p", "G2");
    expect_last_use(&f, "q", "G1");
    expect_verified(&f);
    close_fixture(&f);
}

/* Moving the first node, which reads nothing and frees its own unread
 * output, across a group holding a collective and its wait whose output is
 * kept alive by a graph output. Baseline 30 (i freeable, read by mk):
 *   ind -> e 3 (unread):        33, frees e 3 -> 30
 *   mk reads i -> x 100:        130, frees i 30 -> 100
 *   rs reads x -> rs_out 25:    125, frees x 100 -> 25
 *   rsw reads rs_out -> alias:  25/25 (rs_out kept: rsw_out is an output)
 *   tail reads rsw_out -> z 7:  32, frees z 7 (unread, not an output) -> 25 */
static void test_memory_move_unread_output_node(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 /* 4 ranks: rs scatters x's 100 bytes into 25 each */
                 "\"groups\": [{\"name\": \"dp\", \"size\": 4}],"
                 "\"inputs\": [{\"name\": \"i\", \"size\": 30, \"freeable\": "
                 "true}],"
                 "\"outputs\": [\"rsw_out\"],"
                 "\"nodes\": ["
                 "{\"name\": \"ind\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"e\", \"size\": 3}]},"
                 "{\"name\": \"mk\", \"kind\": \"compute\", \"inputs\": "
                 "[\"i\"], \"outputs\": [{\"name\": \"x\", \"size\": 100}]},"
                 "{\"name\": \"rs\", \"kind\": \"collective\", \"op\": "
                 "\"reduce_scatter\", \"group\": \"dp\", \"inputs\": [\"x\"], "
                 "\"outputs\": [{\"name\": \"rs_out\", \"size\": 25}]},"
                 "{\"name\": \"rsw\", \"kind\": \"wait\", \"inputs\": "
                 "[\"rs_out\"], \"outputs\": [{\"name\": \"rsw_out\", "
                 "\"alias_of\": \"rs_out\"}]},"
                 "{\"name\": \"tail\", \"kind\": \"compute\", \"inputs\": "
                 "[\"rsw_out\"], \"outputs\": [{\"name\": \"z\", \"size\": "
                 "7}]}]}",
                 NULL);
    expect_node(&f, "ind", 3, 3, 33, 30);
    expect_node(&f, "mk", 100, 30, 130, 100);
    expect_node(&f, "rs", 25, 100, 125, 25);
    expect_node(&f, "tail", 7, 7, 32, 25);
    /* ind after [mk rs rsw]: levels shift by -(3 - 3) = 0 and ind sits on
     * rsw's 25: ind 28/25.  potential = max(130, 125, 25, 28) = 130. */
    assert_int_equal(plan(&f, COMMSCHED_MOVE_AFTER_GROUP, "ind", "mk", "rsw"),
                     130);
    commsched_memory_commit_move(f.m, f.s);
    expect_node(&f, "mk", 100, 30, 130, 100);
    expect_node(&f, "ind", 3, 3, 28, 25);
    expect_peak(&f, 130, "mk");
    expect_verified(&f);
    close_fixture(&f);
}

/* ---- the property test --------------------------------------------------- */

/* 1 when node a has a non-fake dependency on node b (g->deps). */
static int depends(const commsched_graph *g, uint32_t a, uint32_t b)
{
    for (uint32_t k = g->deps.off[a]; k < g->deps.off[a + 1]; k++)
        if (g->deps.idx[k] == b)
            return 1;
    return 0;
}

/* The single move of direction dir at order[i] with a group of len
 * nodes: AFTER moves order[i] past order[i+1 .. i+len], BEFORE moves
 * order[i+len] before order[i .. i+len-1]. 1 when legal (no group node
 * depends on the candidate, or it on none, as dir needs). */
static int pick_move(const commsched_graph *g, const uint32_t *order,
                     uint32_t i, uint32_t len, commsched_move dir,
                     uint32_t *cand, uint32_t *head, uint32_t *tail)
{
    int after = dir == COMMSCHED_MOVE_AFTER_GROUP;
    uint32_t first = after ? i + 1 : i;
    *cand = after ? order[i] : order[i + len];
    *head = order[first];
    *tail = order[first + len - 1];
    for (uint32_t k = first; k < first + len; k++)
        if (after ? depends(g, order[k], *cand) : depends(g, *cand, order[k]))
            return 0;
    return 1;
}

static unsigned long long total_moves, total_last_use_changes;

/* Random legal moves over one random graph; after every move the tracked
 * state must equal a full recompute and the potential peak must equal the
 * highest post_alloc among the group and the candidate. */
static void run_random_moves(uint64_t seed, uint32_t n_nodes, unsigned moves)
{
    tu_graph_opts o = tu_random_opts(n_nodes);
    o.fake_percent = 30;
    commsched_graph *g = tu_random_graph(seed, &o);
    uint32_t n = commsched_graph_node_count(g);
    commsched_error err = {0};
    commsched_schedule *s = NULL;
    commsched_memory *m = NULL, *fresh = NULL;
    uint32_t *order = malloc(n * sizeof *order);
    assert_non_null(order);
    tu_random_topo_order(g, seed * 7 + 1, 0, order);
    assert_int_equal(commsched_schedule_create(g, order, &s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(s, &m, &err), COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(s, &fresh, &err), COMMSCHED_OK);
    tu_rng r;
    tu_rng_seed(&r, seed);
    unsigned done = 0, attempts = 0, changed[2] = {0, 0};
    uint32_t *lu_before = malloc(commsched_graph_buffer_count(g) *
                                 sizeof *lu_before);
    assert_non_null(lu_before);
    while (done < moves) {
        assert_true(++attempts < moves * 50);
        assert_int_equal(commsched_schedule_to_array(s, order, &err),
                         COMMSCHED_OK);
        commsched_move dir = tu_rng_chance(&r, 50)
                                 ? COMMSCHED_MOVE_AFTER_GROUP
                                 : COMMSCHED_MOVE_BEFORE_GROUP;
        uint32_t len = 1 + tu_rng_below(&r, tu_rng_chance(&r, 20) ? 30 : 6);
        if (len + 1 > n)
            continue;
        uint32_t i = tu_rng_below(&r, n - len);
        uint32_t cand, head, tail;
        if (!pick_move(g, order, i, len, dir, &cand, &head, &tail))
            continue;
        for (uint32_t b = 0; b < commsched_graph_buffer_count(g); b++)
            lu_before[b] = commsched_memory_last_use(m, b);
        int64_t potential = -1;
        assert_int_equal(commsched_memory_plan_move(m, s, dir, cand, head,
                                                    tail, &potential, &err),
                         COMMSCHED_OK);
        commsched_memory_commit_move(m, s);
        /* the candidate sits on the other side of the group now */
        if (dir == COMMSCHED_MOVE_AFTER_GROUP)
            assert_int_equal(commsched_schedule_next(s, tail), cand);
        else
            assert_int_equal(commsched_schedule_next(s, cand), head);
        assert_int_equal(commsched_memory_recompute(fresh, s, &err),
                         COMMSCHED_OK);
        int64_t truth = commsched_memory_node(fresh, cand).post_alloc;
        for (uint32_t v = head;; v = commsched_schedule_next(s, v)) {
            int64_t pa = commsched_memory_node(fresh, v).post_alloc;
            if (pa > truth)
                truth = pa;
            if (v == tail)
                break;
        }
        if (potential != truth)
            fail_msg("seed %llu move %u: potential peak %lld, recompute "
                     "%lld",
                     (unsigned long long)seed, done, (long long)potential,
                     (long long)truth);
        commsched_status st = commsched_memory_verify(m, s, &err);
        if (st != COMMSCHED_OK)
            fail_msg("seed %llu move %u (%s, cand %s): %s",
                     (unsigned long long)seed, done,
                     dir == COMMSCHED_MOVE_AFTER_GROUP ? "after" : "before",
                     commsched_graph_node_name(g, cand), err.text);
        st = commsched_schedule_check(s, 0, &err);
        if (st != COMMSCHED_OK)
            fail_msg("seed %llu move %u: %s", (unsigned long long)seed, done,
                     err.text);
        for (uint32_t b = 0; b < commsched_graph_buffer_count(g); b++)
            if (lu_before[b] != commsched_memory_last_use(m, b)) {
                changed[dir]++;
                break;
            }
        done++;
    }
    /* the workload must move last uses both ways, or it proves little */
    assert_true(changed[COMMSCHED_MOVE_AFTER_GROUP] >= moves / 100);
    assert_true(changed[COMMSCHED_MOVE_BEFORE_GROUP] >= moves / 100);
    total_last_use_changes += changed[0] + changed[1];
    total_moves += done;
    free(lu_before);
    free(order);
    commsched_memory_destroy(fresh);
    commsched_memory_destroy(m);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

static void test_memory_random_moves_match_recompute(void **state)
{
    (void)state;
    total_moves = total_last_use_changes = 0;
    static const struct {
        uint64_t seed;
        uint32_t nodes;
        unsigned moves;
    } runs[] = {{11, 200, 2500}, {12, 300, 2500}, {13, 400, 3000},
                {14, 250, 2500}, {15, 120, 1500}, {16, 600, 3000}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++)
        run_random_moves(runs[k].seed, runs[k].nodes, runs[k].moves);
    assert_true(total_moves >= 10000);
    print_message("verified %llu random moves (%llu changed a last use)\n",
                  total_moves, total_last_use_changes);
}

/* One run of plan_run/commit_run on (a, ma) against the same moves one at
 * a time on (b, mb): every potential the run priced, up to the first one
 * not committed, equals plan_move's; the orders and the tracked state
 * agree after. Returns the moves made, *early 1 when the run stopped
 * before a candidate that takes a group node's free. */
static size_t one_run(commsched_schedule *a, commsched_memory *ma,
                      commsched_schedule *b, commsched_memory *mb,
                      uint32_t head, uint32_t tail, const uint32_t *cands,
                      size_t nc, tu_rng *r, int *early)
{
    commsched_error err = {0};
    int64_t peaks[16], pot;
    size_t planned = 99;
    assert_true(nc <= 16);
    assert_int_equal(commsched_memory_plan_run(ma, a, head, tail, cands, nc,
                                               peaks, &planned, &err),
                     COMMSCHED_OK);
    assert_true(planned <= nc);
    size_t k = tu_rng_chance(r, 50) ? planned
                                    : tu_rng_below(r, (uint32_t)planned + 1);
    for (size_t j = 0; j < planned && j <= k; j++) {
        assert_int_equal(commsched_memory_plan_move(mb, b,
                                                    COMMSCHED_MOVE_AFTER_GROUP,
                                                    cands[j], head, tail, &pot,
                                                    &err),
                         COMMSCHED_OK);
        assert_int_equal(pot, peaks[j]);
        if (j < k)
            commsched_memory_commit_move(mb, b);
    }
    commsched_memory_commit_run(ma, a, k);
    *early = 0;
    if (k == planned && planned < nc) {
        /* the stopping candidate moves one at a time on both, and takes a
         * free: some buffer it reads was last used in the group */
        const commsched_graph *g = commsched_schedule_graph(a);
        uint32_t c = cands[planned], nb = commsched_graph_buffer_count(g);
        uint32_t *lu = malloc(nb * sizeof *lu);
        assert_non_null(lu);
        for (uint32_t x = 0; x < nb; x++)
            lu[x] = commsched_memory_last_use(ma, x);
        commsched_memory *both[2] = {ma, mb};
        commsched_schedule *sched[2] = {a, b};
        for (int q = 0; q < 2; q++) {
            assert_int_equal(commsched_memory_plan_move(
                                 both[q], sched[q], COMMSCHED_MOVE_AFTER_GROUP,
                                 c, head, tail, &pot, &err),
                             COMMSCHED_OK);
            commsched_memory_commit_move(both[q], sched[q]);
        }
        int took = 0;
        for (uint32_t x = 0; x < nb; x++)
            took |= lu[x] != c && commsched_memory_last_use(ma, x) == c;
        free(lu);
        assert_true(took);
        *early = 1;
    }
    uint32_t n = commsched_graph_node_count(commsched_schedule_graph(a));
    for (uint32_t v = commsched_schedule_first(a), w =
             commsched_schedule_first(b), i = 0;
         i < n; i++, v = commsched_schedule_next(a, v),
                  w = commsched_schedule_next(b, w))
        assert_int_equal(v, w);
    if (commsched_memory_verify(ma, a, &err) != COMMSCHED_OK)
        fail_msg("after a run: %s", err.text);
    assert_int_equal(commsched_memory_verify(mb, b, &err), COMMSCHED_OK);
    return k + (size_t)*early;
}

/* commsched_memory_plan_run/commit_run (RCPPM's runs of moves) against
 * plan_move/commit_move over random graphs, groups and runs. */
static void test_memory_runs_match_single_moves(void **state)
{
    (void)state;
    size_t moved = 0, early = 0, runs_done = 0;
    for (uint64_t seed = 21; seed < 27; seed++) {
        tu_graph_opts o = tu_random_opts(150 + 50 * (uint32_t)(seed % 3));
        o.fake_percent = 30;
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = commsched_graph_node_count(g);
        commsched_error err = {0};
        commsched_schedule *a = NULL, *b = NULL;
        commsched_memory *ma = NULL, *mb = NULL;
        uint32_t *order = malloc(n * sizeof *order), cands[16];
        assert_non_null(order);
        tu_random_topo_order(g, seed * 5 + 3, 0, order);
        assert_int_equal(commsched_schedule_create(g, order, &a, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_schedule_create(g, order, &b, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_memory_create(a, &ma, &err), COMMSCHED_OK);
        assert_int_equal(commsched_memory_create(b, &mb, &err), COMMSCHED_OK);
        tu_rng r;
        tu_rng_seed(&r, seed);
        for (unsigned done = 0, attempts = 0; done < 300;) {
            assert_true(++attempts < 300 * 50);
            assert_int_equal(commsched_schedule_to_array(a, order, &err),
                             COMMSCHED_OK);
            uint32_t len = 1 + tu_rng_below(&r, 5);
            uint32_t i = 1 + tu_rng_below(&r, n - len - 1);
            uint32_t head = order[i], tail = order[i + len - 1];
            size_t nc = 0;
            for (uint32_t j = i; j-- > 0 && nc < 16;) {
                int legal = 1;
                for (uint32_t q = i; q < i + len && legal; q++)
                    legal = !depends(g, order[q], order[j]);
                if (!legal)
                    break;
                cands[nc++] = order[j];
            }
            if (nc == 0)
                continue;
            int e;
            moved += one_run(a, ma, b, mb, head, tail, cands, nc, &r, &e);
            early += (size_t)e;
            runs_done++;
            done++;
        }
        free(order);
        commsched_memory_destroy(ma);
        commsched_memory_destroy(mb);
        commsched_schedule_destroy(a);
        commsched_schedule_destroy(b);
        commsched_graph_destroy(g);
    }
    /* the runs must move many nodes and stop before a free-taking
     * candidate often enough to test that case */
    assert_true(moved >= 2000);
    assert_true(early >= 50);
    print_message("verified %zu runs: %zu moves, %zu stopped before a "
                  "candidate taking a free\n",
                  runs_done, moved, early);
}

/* ---- far runs (commsched_memory_use_tree) --------------------------------- */

/* far_run by hand on graph_m (order A B C D, see above), in tree mode:
 *   group [B] from the first: A reads a, last used by B, so moving A
 *   would take B's free: nothing moves, A is next, not over;
 *   group [C] back to A (C reads x from A): B's move has the potential
 *   1101 (test_memory_move_after_no_last_use_change), so a limit of 1100
 *   stops before it (over, 1101) and 1101 moves it: A C B D with
 *   A 1100/1100, C 1101/1001, B 1011/11, D 13/2.
 * Then three nodes that allocate nothing: every potential is 0, so a
 * limit of 0 moves both candidates and -1 none. */
static void test_memory_far_run_by_hand(void **state)
{
    (void)state;
    fixture f;
    commsched_error err = {0};
    commsched_far_run out;
    open_fixture(&f, graph_m, NULL);
    assert_int_equal(commsched_memory_use_tree(f.m, f.s, &err), COMMSCHED_OK);
    uint32_t A = tu_node(f.g, "A"), B = tu_node(f.g, "B"),
             C = tu_node(f.g, "C");
    assert_int_equal(commsched_memory_position(f.m, C), 2);
    assert_int_equal(commsched_memory_far_run(f.m, f.s, B, B, COMMSCHED_NONE,
                                              INT64_MAX, &out, &err),
                     COMMSCHED_OK);
    assert_int_equal(out.moved, 0);
    assert_int_equal(out.next, A);
    assert_int_equal(out.over, 0);
    assert_int_equal(commsched_memory_far_run(f.m, f.s, C, C, A, 1100, &out,
                                              &err),
                     COMMSCHED_OK);
    assert_int_equal(out.moved, 0);
    assert_int_equal(out.next, B);
    assert_int_equal(out.over, 1);
    assert_int_equal(out.potential, 1101);
    static const char *const same[] = {"A", "B", "C", "D", NULL};
    expect_order(&f, same);
    expect_verified(&f);
    assert_int_equal(commsched_memory_far_run(f.m, f.s, C, C, A, 1101, &out,
                                              &err),
                     COMMSCHED_OK);
    assert_int_equal(out.moved, 1);
    assert_int_equal(out.next, A);
    assert_int_equal(out.over, 0);
    static const char *const moved[] = {"A", "C", "B", "D", NULL};
    expect_order(&f, moved);
    expect_node(&f, "A", 100, 0, 1100, 1100);
    expect_node(&f, "C", 1, 100, 1101, 1001);
    expect_node(&f, "B", 10, 1000, 1011, 11);
    expect_node(&f, "D", 2, 11, 13, 2);
    expect_peak(&f, 1101, "C");
    expect_verified(&f);
    assert_int_equal(commsched_memory_position(f.m, B), 2);
    close_fixture(&f);

    open_fixture(&f, HDR "\"nodes\": ["
                 "{\"name\": \"P\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"p\", \"size\": 0}]},"
                 "{\"name\": \"Q\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"q\", \"size\": 0}]},"
                 "{\"name\": \"R\", \"kind\": \"compute\", \"outputs\": "
                 "[{\"name\": \"r\", \"size\": 0}]}]}",
                 NULL);
    assert_int_equal(commsched_memory_use_tree(f.m, f.s, &err), COMMSCHED_OK);
    uint32_t Q = tu_node(f.g, "Q"), R = tu_node(f.g, "R");
    assert_int_equal(commsched_memory_far_run(f.m, f.s, R, R, COMMSCHED_NONE,
                                              -1, &out, &err),
                     COMMSCHED_OK);
    assert_int_equal(out.moved, 0);
    assert_int_equal(out.next, Q);
    assert_int_equal(out.over, 1);
    assert_int_equal(out.potential, 0);
    assert_int_equal(commsched_memory_far_run(f.m, f.s, R, R, COMMSCHED_NONE,
                                              0, &out, &err),
                     COMMSCHED_OK);
    assert_int_equal(out.moved, 2);
    assert_int_equal(out.next, COMMSCHED_NONE);
    assert_int_equal(out.over, 0);
    static const char *const front[] = {"R", "P", "Q", NULL};
    expect_order(&f, front);
    expect_verified(&f);
    close_fixture(&f);
}


/* Both trackers hold the same state: equal orders, every node's four
 * numbers, every buffer's last use, the tree's positions, and each equals
 * a full recompute. */
static void expect_same(commsched_schedule *a, commsched_memory *ma,
                        commsched_schedule *b, commsched_memory *mb,
                        uint32_t *order, const char *what, unsigned step)
{
    commsched_error err = {0};
    const commsched_graph *g = commsched_schedule_graph(a);
    uint32_t n = commsched_graph_node_count(g);
    assert_int_equal(commsched_schedule_to_array(a, order, &err),
                     COMMSCHED_OK);
    uint32_t w = commsched_schedule_first(b);
    for (uint32_t i = 0; i < n; i++, w = commsched_schedule_next(b, w)) {
        if (order[i] != w)
            fail_msg("%s %u: position %u holds %s, one at a time %s", what,
                     step, i, commsched_graph_node_name(g, order[i]),
                     w == COMMSCHED_NONE ? "(end)"
                                         : commsched_graph_node_name(g, w));
        assert_int_equal(commsched_memory_position(ma, order[i]), i);
    }
    assert_int_equal(w, COMMSCHED_NONE);
    if (commsched_memory_verify(ma, a, &err) != COMMSCHED_OK)
        fail_msg("%s %u: tree tracker: %s", what, step, err.text);
    if (commsched_memory_verify(mb, b, &err) != COMMSCHED_OK)
        fail_msg("%s %u: array tracker: %s", what, step, err.text);
    if (commsched_schedule_check(a, 0, &err) != COMMSCHED_OK)
        fail_msg("%s %u: %s", what, step, err.text);
    for (uint32_t v = 0; v < n; v++) {
        commsched_node_memory x = commsched_memory_node(ma, v),
                              y = commsched_memory_node(mb, v);
        if (x.size_alloc != y.size_alloc || x.size_free != y.size_free ||
            x.post_alloc != y.post_alloc || x.post_free != y.post_free)
            fail_msg("%s %u: node %s: tree %lld %lld %lld %lld, arrays "
                     "%lld %lld %lld %lld",
                     what, step, commsched_graph_node_name(g, v),
                     (long long)x.size_alloc, (long long)x.size_free,
                     (long long)x.post_alloc, (long long)x.post_free,
                     (long long)y.size_alloc, (long long)y.size_free,
                     (long long)y.post_alloc, (long long)y.post_free);
    }
    for (uint32_t x = 0; x < commsched_graph_buffer_count(g); x++)
        assert_int_equal(commsched_memory_last_use(ma, x),
                         commsched_memory_last_use(mb, x));
    assert_true(commsched_memory_peak(ma, a, NULL) ==
                commsched_memory_peak(mb, b, NULL));
}

typedef struct far_counts {
    size_t runs, moved, over, free_stops, full, to_first, empty, negative,
        at_limit, long_runs, single[2], single_lu, short_runs, rebuilt,
        free_after, over_after;
} far_counts;

/* far_run on (a, ma) against its emulation on (b, mb) with the array
 * tracker: candidates cands[0 .. nc) from head back (the run ends after
 * them at stop); each in turn stops the run when it would take a free
 * from the group (plan_run plans fewer) or when its potential peak passes
 * the limit, and moves otherwise: one at a time with plan_move/commit_move
 * (one_by_one), or planned whole with plan_run and committed with
 * commit_run. */
static void far_vs_emulation(commsched_schedule *a, commsched_memory *ma,
                             commsched_schedule *b, commsched_memory *mb,
                             uint32_t head, uint32_t tail, uint32_t stop,
                             const uint32_t *cands, size_t nc, int64_t limit,
                             int one_by_one, int64_t *peaks, far_counts *c)
{
    commsched_error err = {0};
    size_t moved = 0, np = 0;
    int over = 0, took = 0;
    int64_t potential = 0, pot;
    uint32_t next;
    if (one_by_one) {
        for (; moved < nc; moved++) {
            uint32_t cand = cands[moved];
            assert_int_equal(commsched_memory_plan_run(mb, b, head, tail,
                                                       &cand, 1, peaks, &np,
                                                       &err),
                             COMMSCHED_OK);
            if (np == 0) {
                took = 1;
                break;
            }
            assert_int_equal(commsched_memory_plan_move(
                                 mb, b, COMMSCHED_MOVE_AFTER_GROUP, cand,
                                 head, tail, &pot, &err),
                             COMMSCHED_OK);
            assert_true(pot == peaks[0]);
            if (pot > limit) {
                over = 1;
                potential = pot;
                break;
            }
            if (pot == limit)
                c->at_limit++;
            commsched_memory_commit_move(mb, b);
        }
    } else {
        assert_int_equal(commsched_memory_plan_run(mb, b, head, tail, cands,
                                                   nc, peaks, &np, &err),
                         COMMSCHED_OK);
        while (moved < np && peaks[moved] <= limit) {
            if (peaks[moved] == limit)
                c->at_limit++;
            moved++;
        }
        if (moved < np) {
            over = 1;
            potential = peaks[moved];
        } else if (np < nc) {
            took = 1;
        }
        commsched_memory_commit_run(mb, b, moved);
    }
    /* the first not moved is right before the group now; when all moved,
     * that is stop */
    next = commsched_schedule_prev(b, head);
    assert_int_equal(next, moved < nc ? cands[moved] : stop);

    commsched_far_run out = {99, 99, 99, 99};
    assert_int_equal(commsched_memory_far_run(ma, a, head, tail, stop, limit,
                                              &out, &err),
                     COMMSCHED_OK);
    if (out.moved != moved || out.next != next || out.over != over ||
        (over && out.potential != potential))
        fail_msg("far run of %zu candidates, limit %lld: moved %zu next %u "
                 "over %d potential %lld; one at a time moved %zu next %u "
                 "over %d potential %lld (%s)",
                 nc, (long long)limit, out.moved, out.next, out.over,
                 (long long)out.potential, moved, next, over,
                 (long long)potential,
                 took ? "stopped before a free" : "no free taken");
    assert_int_equal(commsched_schedule_prev(a, head), next);
    c->runs++;
    c->moved += moved;
    c->over += (size_t)over;
    c->free_stops += (size_t)took;
    c->free_after += took && moved > 0;
    c->over_after += over && moved > 0;
    c->full += moved == nc;
    c->to_first += moved == nc && stop == COMMSCHED_NONE && nc > 0;
    c->empty += nc == 0;
    c->negative += limit < 0 && nc > 0 && !took;
    c->long_runs += moved >= 20;
    c->short_runs += moved > 0 && moved < 20;
}

/* commsched_memory_far_run on a tracker keeping its levels in the order
 * tree, against plan_run/commit_run and plan_move/commit_move on one
 * keeping arrays, over random graphs, groups, stops and limits (no limit,
 * a negative one, around the schedule's peak, at or just under one of the
 * run's potentials), interleaved on the same trackers with single moves
 * both ways, short planned runs (commit_run on the tree) and rebuilding
 * the tree from scratch. After every step both trackers must agree with
 * each other and with a full recompute. */
static void test_memory_far_runs_match_runs(void **state)
{
    (void)state;
    far_counts c;
    memset(&c, 0, sizeof c);
    for (uint64_t seed = 31; seed < 41; seed++) {
        tu_graph_opts o = tu_random_opts(120 + 80 * (uint32_t)(seed % 5));
        o.fake_percent = 30;
        commsched_graph *g = tu_random_graph(seed, &o);
        uint32_t n = commsched_graph_node_count(g);
        uint32_t nb = commsched_graph_buffer_count(g);
        commsched_error err = {0};
        commsched_schedule *a = NULL, *b = NULL;
        commsched_memory *ma = NULL, *mb = NULL;
        uint32_t *order = malloc(n * sizeof *order);
        uint32_t *cands = malloc(n * sizeof *cands);
        uint32_t *lu = malloc(nb * sizeof *lu);
        int64_t *peaks = malloc(n * sizeof *peaks);
        assert_true(order && cands && lu && peaks);
        tu_random_topo_order(g, seed * 3 + 1, 0, order);
        assert_int_equal(commsched_schedule_create(g, order, &a, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_schedule_create(g, order, &b, &err),
                         COMMSCHED_OK);
        assert_int_equal(commsched_memory_create(a, &ma, &err), COMMSCHED_OK);
        assert_int_equal(commsched_memory_create(b, &mb, &err), COMMSCHED_OK);
        /* without the tree there are no positions */
        assert_int_equal(commsched_memory_position(ma, order[0]),
                         COMMSCHED_NONE);
        assert_int_equal(commsched_memory_use_tree(ma, a, &err), COMMSCHED_OK);
        assert_int_equal(commsched_memory_use_tree(ma, a, &err), COMMSCHED_OK);
        expect_same(a, ma, b, mb, order, "start", 0);
        tu_rng r;
        tu_rng_seed(&r, seed);
        for (unsigned step = 0; step < 600; step++) {
            assert_int_equal(commsched_schedule_to_array(a, order, &err),
                             COMMSCHED_OK);
            uint32_t kind = tu_rng_below(&r, 100);
            if (kind < 3) {
                /* the tree again from scratch */
                assert_int_equal(commsched_memory_recompute(ma, a, &err),
                                 COMMSCHED_OK);
                c.rebuilt++;
                expect_same(a, ma, b, mb, order, "recompute", step);
                continue;
            }
            if (kind < 20) {
                /* a single legal move, either way, on both */
                commsched_move dir = tu_rng_chance(&r, 50)
                                         ? COMMSCHED_MOVE_AFTER_GROUP
                                         : COMMSCHED_MOVE_BEFORE_GROUP;
                uint32_t len = 1 + tu_rng_below(&r, 6);
                uint32_t i = tu_rng_below(&r, n - len);
                uint32_t cand, head, tail;
                if (!pick_move(g, order, i, len, dir, &cand, &head, &tail))
                    continue;
                for (uint32_t x = 0; x < nb; x++)
                    lu[x] = commsched_memory_last_use(ma, x);
                int64_t pa = -1, pb = -2;
                assert_int_equal(commsched_memory_plan_move(
                                     ma, a, dir, cand, head, tail, &pa, &err),
                                 COMMSCHED_OK);
                assert_int_equal(commsched_memory_plan_move(
                                     mb, b, dir, cand, head, tail, &pb, &err),
                                 COMMSCHED_OK);
                assert_true(pa == pb);
                commsched_memory_commit_move(ma, a);
                commsched_memory_commit_move(mb, b);
                c.single[dir]++;
                for (uint32_t x = 0; x < nb; x++)
                    if (lu[x] != commsched_memory_last_use(ma, x)) {
                        c.single_lu++;
                        break;
                    }
                expect_same(a, ma, b, mb, order, "single move", step);
                continue;
            }
            /* a group head..tail with the legal candidates before it */
            uint32_t len = 1 + tu_rng_below(&r, tu_rng_chance(&r, 20) ? 12 : 4);
            if (len >= n)
                continue;
            /* the group with the most legal candidates of a few random
             * ones (one alone leaves most runs short) */
            uint32_t i = 0, j = 0, tries = 1 + tu_rng_below(&r, 12);
            int near_first = tu_rng_chance(&r, 10);
            for (uint32_t t = 0; t < tries; t++) {
                uint32_t ti = near_first
                                  ? tu_rng_below(&r, 8 < n - len ? 8 : n - len)
                                  : tu_rng_below(&r, n - len + 1);
                uint32_t tj = ti; /* candidates order[tj .. ti) are legal */
                while (tj > 0) {
                    int legal = 1;
                    for (uint32_t q = ti; q < ti + len && legal; q++)
                        legal = !depends(g, order[q], order[tj - 1]);
                    if (!legal)
                        break;
                    tj--;
                }
                if (t == 0 || ti - tj > i - j) {
                    i = ti;
                    j = tj;
                }
            }
            uint32_t head = order[i], tail = order[i + len - 1];
            if (kind < 30) {
                /* a planned run of up to 16 (commit_run on the tree) */
                size_t nc = 0;
                for (uint32_t q = i; q-- > j && nc < 16;)
                    cands[nc++] = order[q];
                if (nc == 0)
                    continue;
                int e;
                one_run(a, ma, b, mb, head, tail, cands, nc, &r, &e);
                expect_same(a, ma, b, mb, order, "planned run", step);
                continue;
            }
            /* a far run: back to the first illegal node (or the start),
             * or to a random legal point */
            uint32_t from = j;
            if (tu_rng_chance(&r, 35))
                from = j + tu_rng_below(&r, i - j + 1);
            uint32_t stop = from == 0 ? COMMSCHED_NONE : order[from - 1];
            size_t nc = 0;
            for (uint32_t q = i; q-- > from;)
                cands[nc++] = order[q];
            int64_t limit;
            uint32_t lk = tu_rng_below(&r, 100);
            if (lk < 15) {
                limit = INT64_MAX;
            } else if (lk < 25) {
                limit = tu_rng_chance(&r, 70) ? -1 : INT64_MIN;
            } else if (lk < 50) {
                int64_t peak = commsched_memory_peak(ma, a, NULL);
                int64_t span = peak / 4 + 1;
                limit = peak - span +
                        (int64_t)(tu_rng_next(&r) % (uint64_t)(2 * span + 1));
            } else if (lk < 55) {
                limit = 0;
            } else {
                /* at (or one under) the potential of one of the run's
                 * moves, priced ahead on the array tracker */
                size_t np = 0;
                limit = INT64_MAX;
                if (nc > 0) {
                    assert_int_equal(commsched_memory_plan_run(
                                         mb, b, head, tail, cands, nc, peaks,
                                         &np, &err),
                                     COMMSCHED_OK);
                    if (np > 0) {
                        size_t k = tu_rng_below(&r, (uint32_t)np);
                        limit = peaks[k] - (tu_rng_chance(&r, 50) ? 1 : 0);
                    }
                }
            }
            far_vs_emulation(a, ma, b, mb, head, tail, stop, cands, nc, limit,
                             tu_rng_chance(&r, 50), peaks, &c);
            expect_same(a, ma, b, mb, order, "far run", step);
        }
        free(order);
        free(cands);
        free(lu);
        free(peaks);
        commsched_memory_destroy(ma);
        commsched_memory_destroy(mb);
        commsched_schedule_destroy(a);
        commsched_schedule_destroy(b);
        commsched_graph_destroy(g);
    }
    /* every way a far run ends, often, and runs long enough to matter */
    assert_true(c.moved >= 6000);
    assert_true(c.long_runs >= 50);
    assert_true(c.over >= 900 && c.over_after >= 200);
    assert_true(c.free_stops >= 250 && c.free_after >= 120);
    assert_true(c.full >= 800 && c.to_first >= 25);
    assert_true(c.empty >= 100 && c.negative >= 150 && c.at_limit >= 300);
    assert_true(c.single[0] >= 150 && c.single[1] >= 150);
    assert_true(c.single_lu >= 25 && c.rebuilt >= 80);
    print_message("verified %zu far runs: %zu moves (%zu runs of 20 or more, "
                  "%zu shorter), %zu stopped over the limit (%zu after a "
                  "move), %zu before a free (%zu after a move), %zu moved "
                  "all (%zu to the schedule's first), %zu "
                  "without candidates, %zu under a negative limit, %zu "
                  "moves at the limit; %zu + %zu single moves (%zu changed a "
                  "last use), %zu tree rebuilds\n",
                  c.runs, c.moved, c.long_runs, c.short_runs, c.over,
                  c.over_after, c.free_stops, c.free_after, c.full, c.to_first, c.empty, c.negative,
                  c.at_limit, c.single[0], c.single[1], c.single_lu,
                  c.rebuilt);
}

/* verify notices a schedule changed behind the tracker's back, and names
 * where; a recompute repairs it. */
static void test_memory_verify_detects_untracked_move(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, graph_m, NULL);
    commsched_error err = {0};
    /* Move B after C without telling the tracker: the true levels are
     * A 1100, C 1101/1001, B 1011/11 (see the AFTER case above), the
     * tracked ones still say C 111/11. */
    commsched_schedule_move_run_after(f.s, tu_node(f.g, "B"),
                                      tu_node(f.g, "B"), tu_node(f.g, "C"));
    assert_int_equal(commsched_memory_verify(f.m, f.s, &err),
                     COMMSCHED_EINTERNAL);
    assert_int_equal(err.status, COMMSCHED_EINTERNAL);
    assert_non_null(strstr(err.text, "\"C\""));
    assert_non_null(strstr(err.text, "post_alloc"));
    commsched_error_clear(&err);
    assert_int_equal(commsched_memory_recompute(f.m, f.s, &err),
                     COMMSCHED_OK);
    assert_int_equal(commsched_memory_verify(f.m, f.s, &err), COMMSCHED_OK);
    expect_node(&f, "C", 1, 100, 1101, 1001);
    close_fixture(&f);
}

/* A plan committed on a clone: the tracker follows the clone, not the
 * untouched original, and verify says so at the first differing node
 * (A: it frees a in B A C D, not in A B C D). */
static void test_memory_verify_detects_commit_on_other_schedule(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, graph_m, NULL);
    commsched_error err = {0};
    commsched_schedule *c = NULL;
    assert_int_equal(commsched_schedule_clone(f.s, &c, &err), COMMSCHED_OK);
    int64_t peak = 0;
    assert_int_equal(commsched_memory_plan_move(f.m, c,
                                                COMMSCHED_MOVE_AFTER_GROUP,
                                                tu_node(f.g, "A"),
                                                tu_node(f.g, "B"),
                                                tu_node(f.g, "B"), &peak, &err),
                     COMMSCHED_OK);
    commsched_memory_commit_move(f.m, c);
    assert_int_equal(commsched_memory_verify(f.m, c, &err), COMMSCHED_OK);
    assert_int_equal(commsched_memory_verify(f.m, f.s, &err),
                     COMMSCHED_EINTERNAL);
    assert_non_null(strstr(err.text, "at node \"A\""));
    assert_non_null(strstr(err.text, "size_free 1000, recompute 0"));
    commsched_schedule_destroy(c);
    close_fixture(&f);
}

/* A difference in the last-use map alone (every level equal) is detected:
 * z has size 0 and is read by A and B, which allocate nothing. Tracking the
 * swap B A on a clone makes A z's last use; the original A B says B. */
static void test_memory_verify_detects_last_use_only_mismatch(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, HDR
                 "\"inputs\": [{\"name\": \"z\", \"size\": 0, \"freeable\": "
                 "true}],"
                 "\"nodes\": ["
                 "{\"name\": \"A\", \"kind\": \"compute\", \"inputs\": "
                 "[\"z\"]},"
                 "{\"name\": \"B\", \"kind\": \"compute\", \"inputs\": "
                 "[\"z\"]}]}",
                 NULL);
    commsched_error err = {0};
    commsched_schedule *c = NULL;
    assert_int_equal(commsched_schedule_clone(f.s, &c, &err), COMMSCHED_OK);
    expect_last_use(&f, "z", "B");
    int64_t peak = -1;
    assert_int_equal(commsched_memory_plan_move(f.m, c,
                                                COMMSCHED_MOVE_AFTER_GROUP,
                                                tu_node(f.g, "A"),
                                                tu_node(f.g, "B"),
                                                tu_node(f.g, "B"), &peak, &err),
                     COMMSCHED_OK);
    assert_int_equal(peak, 0);
    commsched_memory_commit_move(f.m, c);
    expect_last_use(&f, "z", "A");
    assert_int_equal(commsched_memory_verify(f.m, c, &err), COMMSCHED_OK);
    assert_int_equal(commsched_memory_verify(f.m, f.s, &err),
                     COMMSCHED_EINTERNAL);
    assert_non_null(strstr(err.text, "buffer \"z\" last used by \"A\", "
                                     "recompute says \"B\""));
    commsched_schedule_destroy(c);
    close_fixture(&f);
}

/* A schedule that lost a node cannot be estimated. */
static void test_memory_rejects_incomplete_schedule(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, graph_m, NULL);
    commsched_error err = {0};
    commsched_schedule_unlink(f.s, tu_node(f.g, "C"));
    assert_int_equal(commsched_memory_recompute(f.m, f.s, &err),
                     COMMSCHED_EINTERNAL);
    commsched_memory *m2 = NULL;
    commsched_error_clear(&err);
    assert_int_equal(commsched_memory_create(f.s, &m2, &err),
                     COMMSCHED_EINTERNAL);
    assert_null(m2);
    commsched_memory_destroy(NULL);
    close_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_freeable_inputs_and_unread_buffers),
        cmocka_unit_test(test_memory_wait_alias_extends_collective_output),
        cmocka_unit_test(test_memory_inplace_all_reduce_extends_input),
        cmocka_unit_test(test_memory_graph_outputs_never_freed),
        cmocka_unit_test(test_memory_peak_is_first_node_and_alias_chains),
        cmocka_unit_test(test_memory_matches_oracle_on_random_orders),
        cmocka_unit_test(test_memory_move_after_first_node_last_use_changes),
        cmocka_unit_test(test_memory_move_after_no_last_use_change),
        cmocka_unit_test(test_memory_move_before_updates_last_use),
        cmocka_unit_test(test_memory_move_before_no_last_use_change),
        cmocka_unit_test(test_memory_move_group_of_three_round_trip),
        cmocka_unit_test(test_memory_move_unread_output_node),
        cmocka_unit_test(test_memory_random_moves_match_recompute),
        cmocka_unit_test(test_memory_runs_match_single_moves),
        cmocka_unit_test(test_memory_far_run_by_hand),
        cmocka_unit_test(test_memory_far_runs_match_runs),
        cmocka_unit_test(test_memory_verify_detects_untracked_move),
        cmocka_unit_test(test_memory_verify_detects_commit_on_other_schedule),
        cmocka_unit_test(test_memory_verify_detects_last_use_only_mismatch),
        cmocka_unit_test(test_memory_rejects_incomplete_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
