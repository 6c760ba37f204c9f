/* commsched — --check's host reference (src/runtime/check_ref.c), which
 * needs no MPI: values per buffer, so two in-flight collectives sharing an
 * input expect the same; a collective reading another's output expects
 * the replayed result; a wrong element is found. Expected values are built from the fills of every
 * rank, as the ranks would hold them. On random graphs (every collective
 * kind, in place or not, odd sizes, mixed element kinds, collectives in
 * flight together) the segment replay equals the byte-for-byte one it
 * replaced (check_ref_bytes.c): the same regions, every element it knows
 * of the same value, as many unknown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "check_ref.h"
#include "check_ref_bytes.h"
#include "commsched/graph.h"
#include "graph_internal.h"
#include "plan.h"

#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "
#define W 4
#define N 16 /* int32 elements of every buffer */

/* Two all-reduces of the world read `a` while both are in flight; after
 * their waits, a sync all-reduce on pairs reads the first one's result. */
static const char *const g_shared =
    HDR "\"groups\": [{\"name\": \"world\", \"size\": 4},"
    "              {\"name\": \"pair\", \"size\": 2}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 64, \"freeable\": true}],"
    "\"outputs\": [\"o3\", \"v2\"], \"nodes\": ["
    "{\"name\": \"c0\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    " \"outputs\": [{\"name\": \"a\", \"size\": 64}]},"
    "{\"name\": \"ar1\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"world\", \"dtype\": \"int32\", \"inputs\": [\"a\"],"
    " \"outputs\": [{\"name\": \"o1\", \"size\": 64}]},"
    "{\"name\": \"ar2\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"world\", \"dtype\": \"int32\", \"inputs\": [\"a\"],"
    " \"outputs\": [{\"name\": \"o2\", \"size\": 64}]},"
    "{\"name\": \"w1\", \"kind\": \"wait\", \"inputs\": [\"o1\"],"
    " \"outputs\": [{\"name\": \"v1\", \"alias_of\": \"o1\"}]},"
    "{\"name\": \"w2\", \"kind\": \"wait\", \"inputs\": [\"o2\"],"
    " \"outputs\": [{\"name\": \"v2\", \"alias_of\": \"o2\"}]},"
    "{\"name\": \"ar3\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    " \"group\": \"pair\", \"dtype\": \"int32\", \"async\": false,"
    " \"inputs\": [\"v1\"], \"outputs\": [{\"name\": \"o3\", \"size\": 64}]}"
    "]}";

static commsched_graph *load(const char *json)
{
    commsched_graph *g = NULL;
    commsched_error err = {0};
    if (commsched_graph_load_string(json, 0, &g, &err) != COMMSCHED_OK)
        fail_msg("graph: %s %s", err.path, err.text);
    return g;
}

typedef struct fixture {
    commsched_graph *g;
    cs_plan p;
    cs_check_ref *ref[W];
} fixture;

static void setup(fixture *f, const char *json)
{
    commsched_error err = {0};
    f->g = load(json);
    if (cs_plan_build(&f->p, f->g, NULL, 1.0, &err) != COMMSCHED_OK)
        fail_msg("plan: %s", err.text);
    uint8_t ek[16] = {0};
    for (uint32_t v = 0; v < f->g->n_nodes; v++)
        ek[v] = CS_EK_I32;
    for (int r = 0; r < W; r++)
        assert_int_equal(cs_check_ref_build(&f->ref[r], &f->p, W, r, ek,
                                            CS_REF_RS_AT_START, &err),
                         COMMSCHED_OK);
}

static void teardown(fixture *f)
{
    for (int r = 0; r < W; r++)
        cs_check_ref_free(f->ref[r]);
    cs_plan_fini(&f->p);
    commsched_graph_destroy(f->g);
}

static uint32_t node(const fixture *f, const char *name)
{
    return commsched_graph_find_node(f->g, name);
}

static void test_shared_input_and_chain(void **state)
{
    (void)state;
    fixture f;
    setup(&f, g_shared);
    uint32_t a = commsched_graph_find_buffer(f.g, "a");
    assert_true(cs_check_ref_touched(f.ref[0], a));
    /* What every rank holds in a, and their sum. */
    int32_t hold[W][N], sum[N] = {0};
    for (int r = 0; r < W; r++) {
        cs_check_ref_fill(f.ref[r], a, hold[r], sizeof hold[r]);
        for (int i = 0; i < N; i++)
            sum[i] += hold[r][i];
    }
    /* Values differ between ranks (a piece from the wrong rank shows). */
    assert_true(memcmp(hold[0], hold[1], sizeof hold[0]) != 0);
    for (int r = 0; r < W; r++) {
        /* Both all-reduces read the same values while in flight. */
        const char *both[2] = {"ar1", "ar2"};
        for (int k = 0; k < 2; k++) {
            uint32_t v = node(&f, both[k]), buf;
            size_t off, len;
            cs_check_ref_region(f.ref[r], v, &buf, &off, &len);
            assert_int_equal(off, 0);
            assert_int_equal(len, sizeof sum);
            assert_int_equal(cs_check_ref_verify(f.ref[r], v, sum, NULL, NULL),
                             -1);
        }
        /* ar3 reads ar1's result on pairs: twice the world's sum. */
        int32_t twice[N];
        for (int i = 0; i < N; i++)
            twice[i] = 2 * sum[i];
        assert_int_equal(cs_check_ref_verify(f.ref[r], node(&f, "ar3"), twice,
                                             NULL, NULL),
                         -1);
        /* The input's own values are not the result: a no-op fails. */
        assert_int_equal(cs_check_ref_verify(f.ref[r], node(&f, "ar3"), sum,
                                             NULL, NULL),
                         0);
        assert_int_equal(cs_check_ref_unknown(f.ref[r]), 0);
    }
    /* A corrupted element is found, with both values. */
    sum[5] += 1;
    double want = 0, got = 0;
    assert_int_equal(cs_check_ref_verify(f.ref[2], node(&f, "ar1"), sum, &want,
                                         &got),
                     5);
    assert_true(got == want + 1);
    teardown(&f);
}

/* A tiny deterministic generator (no libc rand: the same graphs on every
 * machine). */
static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* A readable buffer (the first one, a compute node's, always is). */
static int pick(uint64_t *s, const int *ok, int n)
{
    for (int tries = 0; tries < 8; tries++) {
        int b = (int)(rnd(s) % (uint32_t)n);
        if (ok[b])
            return b;
    }
    return 0;
}

/* A random valid graph on groups world (4) and pair (2): buffers made by
 * compute nodes (sizes in bytes, odd ones too), collectives of every kind
 * the sizes allow reading them, some in place, async ones waited for at a
 * random later point (so several are in flight at once), some sync. */
static char *random_graph(uint64_t seed, size_t *n_nodes)
{
    size_t cap = 1 << 16, len = 0;
    char *j = malloc(cap);
    uint64_t s = seed * 2654435761u + 1;
    char bufs[40][16];
    long size[40];
    int nb = 0, pend[40], np = 0, nn = 0, ok[40]; /* ok: readable */
#define PUT(...) len += (size_t)snprintf(j + len, cap - len, __VA_ARGS__)
    PUT(HDR "\"groups\": [{\"name\": \"world\", \"size\": 4}, "
            "{\"name\": \"pair\", \"size\": 2}], \"nodes\": [");
    static const char *const dts[] = {"int32", "float32", "bfloat16",
                                      "uint8", "float64", "int16"};
    static const char *const ops[] = {"all_reduce", "all_gather",
                                      "reduce_scatter", "broadcast",
                                      "reduce", "all_to_all"};
    for (int step = 0; step < 24 && nb < 36; step++) {
        int what = (int)(rnd(&s) % 3);
        if (nb < 2 || what == 0) { /* a compute node makes a buffer */
            long sz = 8 * (1 + (long)(rnd(&s) % 12)) + (rnd(&s) % 4 ? 0 : rnd(&s) % 7);
            snprintf(bufs[nb], sizeof bufs[nb], "b%d", nb);
            PUT("%s{\"name\": \"n%d\", \"kind\": \"compute\", \"inputs\": [%s%s%s],"
                " \"outputs\": [{\"name\": \"%s\", \"size\": %ld}]}",
                nn ? ", " : "", nn, nb ? "\"" : "", nb ? bufs[pick(&s, ok, nb)] : "",
                nb ? "\"" : "", bufs[nb], sz);
            ok[nb] = 1;
            size[nb++] = sz;
            nn++;
            continue;
        }
        if (what == 1 && np > 0) { /* a wait for something in flight */
            int i = (int)(rnd(&s) % (uint32_t)np);
            int b = pend[i];
            pend[i] = pend[--np];
            snprintf(bufs[nb], sizeof bufs[nb], "b%d", nb);
            PUT(", {\"name\": \"n%d\", \"kind\": \"wait\", \"inputs\": [\"%s\"],"
                " \"outputs\": [{\"name\": \"%s\", \"alias_of\": \"%s\"}]}",
                nn, bufs[b], bufs[nb], bufs[b]);
            ok[nb] = 1;
            size[nb++] = size[b];
            nn++;
            continue;
        }
        int b = pick(&s, ok, nb), k = rnd(&s) % 2 ? 4 : 2;
        const char *op = ops[rnd(&s) % 6], *dt = dts[rnd(&s) % 6];
        long in = size[b], out;
        int inplace = rnd(&s) % 3 == 0, sync = rnd(&s) % 4 == 0;
        if (!strcmp(op, "all_gather")) {
            out = in * k;
            inplace = 0;
        } else if (!strcmp(op, "reduce_scatter")) {
            if (in % k)
                continue;
            out = in / k;
            inplace = 0;
        } else if (!strcmp(op, "all_to_all")) {
            if (in % k)
                continue;
            out = in;
        } else {
            out = in;
        }
        snprintf(bufs[nb], sizeof bufs[nb], "b%d", nb);
        PUT(", {\"name\": \"n%d\", \"kind\": \"collective\", \"op\": \"%s\","
            " \"group\": \"%s\", \"dtype\": \"%s\",%s \"inputs\": [\"%s\"],",
            nn, op, k == 4 ? "world" : "pair", dt,
            sync ? " \"async\": false," : "", bufs[b]);
        if (inplace)
            PUT(" \"outputs\": [{\"name\": \"%s\", \"alias_of\": \"%s\"}]}",
                bufs[nb], bufs[b]);
        else
            PUT(" \"outputs\": [{\"name\": \"%s\", \"size\": %ld}]}", bufs[nb],
                out);
        size[nb] = out;
        ok[nb] = sync;
        if (inplace)
            ok[b] = 0; /* written in place: read its result */
        if (!sync)
            pend[np++] = nb;
        nb++;
        nn++;
    }
    while (np > 0) { /* every async collective is waited for */
        int b = pend[--np];
        PUT(", {\"name\": \"n%d\", \"kind\": \"wait\", \"inputs\": [\"%s\"],"
            " \"outputs\": [{\"name\": \"w%d\", \"alias_of\": \"%s\"}]}",
            nn, bufs[b], nn, bufs[b]);
        nn++;
    }
    PUT("]}");
#undef PUT
    *n_nodes = (size_t)nn;
    return j;
}

static void test_segments_equal_bytes(void **state)
{
    (void)state;
    static const cs_ekind kinds[] = {CS_EK_F64, CS_EK_F32, CS_EK_F16,
                                     CS_EK_BF16, CS_EK_U16, CS_EK_U8,
                                     CS_EK_I64, CS_EK_I32, CS_EK_I16,
                                     CS_EK_I8};
    int graphs = 0, compared = 0;
    uint64_t known_elems = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        size_t nn;
        char *json = random_graph(seed, &nn);
        commsched_graph *g = NULL;
        commsched_error err = {0};
        if (commsched_graph_load_string(json, 0, &g, &err) != COMMSCHED_OK) {
            free(json); /* a race the builder refuses: skip */
            continue;
        }
        free(json);
        graphs++;
        cs_plan p;
        assert_int_equal(cs_plan_build(&p, g, NULL, 1.0, &err), COMMSCHED_OK);
        uint8_t *ek = calloc(g->n_nodes + 1, 1);
        uint64_t s = seed;
        for (uint32_t v = 0; v < g->n_nodes; v++) /* as the adaptor, or not */
            ek[v] = (uint8_t)(rnd(&s) % 2 ? kinds[rnd(&s) % 10] : CS_EK_I32);
        for (int r = 0; r < W; r++) {
            cs_check_ref *seg = NULL;
            ob_ref *byte = NULL;
            cs_ref_rs rs = r % 2 ? CS_REF_RS_AT_RANK : CS_REF_RS_AT_START;
            assert_int_equal(cs_check_ref_build(&seg, &p, W, r, ek, rs, &err),
                             COMMSCHED_OK);
            assert_int_equal(ob_ref_build(&byte, &p, W, r, ek, rs, &err),
                             COMMSCHED_OK);
            assert_int_equal(cs_check_ref_unknown(seg), ob_ref_unknown(byte));
            for (uint32_t v = 0; v < g->n_nodes; v++) {
                if (g->nodes[v].kind != COMMSCHED_NODE_COLLECTIVE)
                    continue;
                uint32_t b1, b2;
                size_t o1, o2, l1, l2;
                cs_check_ref_region(seg, v, &b1, &o1, &l1);
                ob_ref_region(byte, v, &b2, &o2, &l2);
                assert_int_equal(b1, b2);
                assert_int_equal(o1, o2);
                assert_int_equal(l1, l2);
                if (!l1)
                    continue;
                /* The oracle's bytes, its unknown ones garbage: the segment
                 * reference must find no wrong element, so it knows nothing
                 * the oracle does not and agrees on what both know. */
                const uint8_t *kn, *want = ob_ref_expect(byte, v, &kn);
                uint8_t *got = malloc(l1);
                for (size_t i = 0; i < l1; i++) {
                    got[i] = kn[i] ? want[i] : (uint8_t)(0xEE ^ i);
                    known_elems += kn[i] != 0;
                }
                assert_int_equal(cs_check_ref_verify(seg, v, got, NULL, NULL),
                                 -1);
                free(got);
                compared++;
            }
            cs_check_ref_free(seg);
            ob_ref_free(byte);
        }
        free(ek);
        cs_plan_fini(&p);
        commsched_graph_destroy(g);
    }
    print_message("%d random graphs, %d results compared, %llu known bytes\n",
                  graphs, compared, (unsigned long long)known_elems);
    assert_true(graphs > 100 && compared > 1000 && known_elems > 10000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_input_and_chain),
        cmocka_unit_test(test_segments_equal_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
