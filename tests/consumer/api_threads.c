/* The one-call API from C, through the public header only: options and
 * their located errors, NULL handling, the result's graph saving and
 * loading again, the caller's graph left untouched, and commsched_optimize
 * from several threads at once, on different graphs and on one shared
 * graph, giving exactly the serial results. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <commsched/commsched.h>

static int failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "api_threads.c:%d: check failed: %s\n",            \
                    __LINE__, #cond);                                          \
            failures++;                                                        \
        }                                                                      \
    } while (0)

/* An FSDP-like forward pass: per layer an all-gather of the weight shard
 * (8 shards on dp's 8 ranks), its wait and a matmul; three collectives share one group, so
 * decide_global_ordering_of_comms adds fake edges. Runtimes vary with
 * seed; collectives take the cost model's estimate. */
static commsched_graph *make_graph(unsigned layers, unsigned seed)
{
    commsched_error err = {0};
    commsched_builder *b = NULL;
    commsched_graph *g = NULL;
    char name[64], in[64], out[64], w[64], prev[64] = "act0";
    if (commsched_builder_create("threads", &b, &err) != COMMSCHED_OK)
        return NULL;
    commsched_builder_add_group(b, "dp", 8, 1, &err);
    commsched_builder_add_input(b, "act0", 1 << 20, 0, &err);
    for (unsigned i = 0; i < layers; i++) {
        snprintf(in, sizeof in, "w%u_shard", i);
        int64_t shard = (int64_t)(1 + (seed + i) % 3) << 20;
        commsched_builder_add_input(b, in, shard, 0, &err);
        const char *ins[2] = {in, NULL};
        snprintf(out, sizeof out, "ag%u_out", i);
        commsched_output_spec o = {out, 8 * shard, NULL};
        commsched_node_spec s = {0};
        snprintf(name, sizeof name, "ag%u", i);
        s.name = name;
        s.kind = COMMSCHED_NODE_COLLECTIVE;
        s.op = "all_gather";
        s.group = "dp";
        s.inputs = ins;
        s.n_inputs = 1;
        s.outputs = &o;
        s.n_outputs = 1;
        s.runtime_ns = s.flops = s.bytes = -1;
        commsched_builder_add_node(b, &s, &err);

        snprintf(w, sizeof w, "w%u", i);
        commsched_output_spec wo = {w, 0, out};
        const char *wins[1] = {out};
        snprintf(name, sizeof name, "ag%u_wait", i);
        s.name = name;
        s.kind = COMMSCHED_NODE_WAIT;
        s.op = NULL;
        s.group = NULL;
        s.inputs = wins;
        s.outputs = &wo;
        commsched_builder_add_node(b, &s, &err);

        const char *mins[2] = {prev, w};
        snprintf(out, sizeof out, "act%u", i + 1);
        commsched_output_spec mo = {out, 1 << 20, NULL};
        snprintf(name, sizeof name, "mm%u", i);
        s.name = name;
        s.kind = COMMSCHED_NODE_COMPUTE;
        s.op = "mm";
        s.inputs = mins;
        s.n_inputs = 2;
        s.outputs = &mo;
        s.runtime_ns = 20000.0 * (1 + (seed * 7 + i) % 5);
        s.gemm_like = 1;
        commsched_builder_add_node(b, &s, &err);
        snprintf(prev, sizeof prev, "%s", out);
    }
    commsched_builder_add_output(b, prev, &err);
    if (commsched_builder_finish(b, 0, &g, &err) != COMMSCHED_OK) {
        char msg[1024];
        fprintf(stderr, "make_graph: %s\n",
                commsched_error_format(&err, NULL, msg, sizeof msg));
        return NULL;
    }
    return g;
}

/* The order and makespan after the default pipeline; -1 on failure. */
typedef struct outcome {
    uint32_t order[64];
    double makespan;
    int ok;
} outcome;

static outcome run_once(const commsched_graph *g,
                        const commsched_optimize_options *o)
{
    outcome out;
    memset(&out, 0, sizeof out);
    commsched_result *r = NULL;
    commsched_error err = {0};
    if (commsched_optimize(g, o, &r, &err) != COMMSCHED_OK)
        return out;
    uint32_t n = commsched_result_node_count(r);
    if (n <= 64) {
        memcpy(out.order, commsched_result_order(r), n * sizeof *out.order);
        out.makespan = commsched_result_after(r)->makespan_ns;
        out.ok = 1;
    }
    commsched_result_destroy(r);
    return out;
}

#define N_THREADS 8
#define N_GRAPHS 16

typedef struct job {
    commsched_graph *const *graphs; /* N_GRAPHS; NULL entries: use shared */
    const commsched_graph *shared;
    const commsched_optimize_options *opts;
    const outcome *want;            /* per graph */
    int first, mismatches;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    for (int round = 0; round < 3; round++)
        for (int k = j->first; k < N_GRAPHS; k += N_THREADS) {
            const commsched_graph *g = j->shared ? j->shared : j->graphs[k];
            outcome got = run_once(g, j->opts);
            const outcome *want = j->shared ? &j->want[0] : &j->want[k];
            if (!got.ok || got.makespan != want->makespan ||
                memcmp(got.order, want->order, sizeof got.order) != 0)
                j->mismatches++;
        }
    return NULL;
}

static void test_threads(void)
{
    commsched_graph *graphs[N_GRAPHS];
    outcome want[N_GRAPHS];
    for (unsigned k = 0; k < N_GRAPHS; k++) {
        graphs[k] = make_graph(3 + k % 6, k);
        CHECK(graphs[k] != NULL);
        if (!graphs[k])
            return;
        want[k] = run_once(graphs[k], NULL);
        CHECK(want[k].ok);
    }
    /* different graphs in parallel */
    pthread_t t[N_THREADS];
    job jobs[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i] = (job){graphs, NULL, NULL, want, i, 0};
        CHECK(pthread_create(&t[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(jobs[i].mismatches == 0);
    }
    /* one graph and one options object shared by every thread */
    commsched_optimize_options *o = NULL;
    commsched_error err = {0};
    CHECK(commsched_optimize_options_create(&o, &err) == COMMSCHED_OK);
    CHECK(commsched_optimize_options_set(o, "verify", "true", &err) ==
          COMMSCHED_OK);
    outcome shared_want = run_once(graphs[5], o);
    CHECK(shared_want.ok);
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i] = (job){graphs, graphs[5], o, &shared_want, i, 0};
        CHECK(pthread_create(&t[i], NULL, worker, &jobs[i]) == 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK(jobs[i].mismatches == 0);
    }
    commsched_optimize_options_destroy(o);
    for (unsigned k = 0; k < N_GRAPHS; k++)
        commsched_graph_destroy(graphs[k]);
}

static void test_options(void)
{
    commsched_optimize_options *o = NULL;
    commsched_error err = {0};
    CHECK(commsched_optimize_options_create(&o, &err) == COMMSCHED_OK);
    static const char *const good[][2] = {
        {"passes", "raise_comms,sink_waits"},
        {"passes", "none"},
        {"passes", ""},
        {"passes", "default"},
        {"device", "a100"},
        {"cost_model", "inductor"},
        {"comm_streams", "single"},
        {"verify", "false"},
        {"reorder_iterative_peak_memory_budget", "0.3"},
        {"reorder_iterative_debug_limit_to_reorder", "none"},
        {"sink_iterative_use_runtime_estimations", "true"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        commsched_error_clear(&err);
        CHECK(commsched_optimize_options_set(o, good[i][0], good[i][1],
                                             &err) == COMMSCHED_OK);
    }
    static const char *const bad[][3] = {
        {"passes", "raise_comms,,bogus", "passes"},
        {"device", "tpu9", "device"},
        {"cost_model", "nccl2", "cost_model"},
        {"comm_streams", "two", "comm_streams"},
        {"verify", "yes", "verify"},
        {"reorder_iterative_peak_memory_budget", "x",
         "reorder_iterative_peak_memory_budget"},
        {"sink_iterative_use_runtime_estimations", "2",
         "sink_iterative_use_runtime_estimations"},
        {"no_such_option", "1", "no_such_option"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        commsched_error_clear(&err);
        CHECK(commsched_optimize_options_set(o, bad[i][0], bad[i][1], &err) ==
              COMMSCHED_EINVAL);
        CHECK(err.status == COMMSCHED_EINVAL);
        CHECK(strcmp(err.path, bad[i][2]) == 0);
    }
    commsched_error_clear(&err);
    CHECK(commsched_optimize_options_set(o, NULL, "x", &err) ==
          COMMSCHED_EINVAL);
    commsched_device d = *commsched_device_builtin("h100");
    CHECK(commsched_optimize_options_set_device(o, &d, NULL) == COMMSCHED_OK);
    d.peak_flops = -1;
    CHECK(commsched_optimize_options_set_device(o, &d, NULL) ==
          COMMSCHED_EINVAL);
    commsched_optimize_options_destroy(o);
    commsched_optimize_options_destroy(NULL);
    commsched_result_destroy(NULL);

    commsched_result *r = (commsched_result *)&err; /* must be reset */
    commsched_error_clear(&err);
    CHECK(commsched_optimize(NULL, NULL, &r, &err) == COMMSCHED_EINVAL);
    CHECK(r == NULL);
    CHECK(commsched_optimize(NULL, NULL, NULL, NULL) == COMMSCHED_EINVAL);
}

/* The result's graph with the new order saves and loads again; the
 * caller's graph is unchanged (its own order, no added fake edges). */
static void test_save_roundtrip(void)
{
    commsched_graph *g = make_graph(4, 1), *back = NULL, *again = NULL;
    commsched_result *r = NULL;
    commsched_error err = {0};
    char *text = NULL;
    CHECK(g != NULL);
    if (!g)
        return;
    /* a pipeline that adds fake edges, which must land in the result only */
    commsched_optimize_options *o = NULL;
    CHECK(commsched_optimize_options_create(&o, &err) == COMMSCHED_OK);
    CHECK(commsched_optimize_options_set(
              o, "passes", "decide_global_ordering_of_comms,overlap", &err) ==
          COMMSCHED_OK);
    CHECK(commsched_optimize(g, o, &r, &err) == COMMSCHED_OK);
    if (!r)
        goto done;
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        goto done;
    CHECK(commsched_graph_save_stream(commsched_result_graph(r),
                                      commsched_result_order(r), NULL, f,
                                      &err) == COMMSCHED_OK);
    long len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    CHECK(text && fread(text, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    CHECK(commsched_graph_load_string(text, 0, &back, &err) == COMMSCHED_OK);
    if (back) {
        uint32_t n = commsched_graph_node_count(back);
        CHECK(n == commsched_result_node_count(r));
        for (uint32_t i = 0; i < n; i++)
            CHECK(strcmp(commsched_graph_node_name(back, i),
                         commsched_result_node_name(r, i)) == 0);
    }
    /* g itself: same order, and a second run gives the same result */
    CHECK(strcmp(commsched_graph_node_name(g, 0), "ag0") == 0);
    commsched_result *r2 = NULL;
    CHECK(commsched_optimize(g, o, &r2, &err) == COMMSCHED_OK);
    if (r2) {
        CHECK(memcmp(commsched_result_order(r), commsched_result_order(r2),
                     commsched_result_node_count(r) * sizeof(uint32_t)) == 0);
        CHECK(commsched_result_after(r)->makespan_ns ==
              commsched_result_after(r2)->makespan_ns);
        CHECK(commsched_result_before(r2)->makespan_ns ==
              commsched_result_before(r)->makespan_ns);
        CHECK(commsched_result_runtimes(r2)[0] > 0); /* cost model: ag0 */
    }
    commsched_result_destroy(r2);
    /* the graph saved in its own order has no fake edges (none added) */
    f = tmpfile();
    if (f) {
        CHECK(commsched_graph_save_stream(g, NULL, NULL, f, &err) ==
              COMMSCHED_OK);
        long l2 = ftell(f);
        rewind(f);
        char *t2 = calloc(1, (size_t)l2 + 1);
        CHECK(t2 && fread(t2, 1, (size_t)l2, f) == (size_t)l2);
        CHECK(t2 && strstr(t2, "after_fake") == NULL);
        CHECK(t2 && strstr(text, "after_fake") != NULL);
        CHECK(commsched_graph_load_string(t2, 0, &again, &err) ==
              COMMSCHED_OK);
        free(t2);
        fclose(f);
    }
done:
    free(text);
    commsched_optimize_options_destroy(o);
    commsched_graph_destroy(again);
    commsched_graph_destroy(back);
    commsched_result_destroy(r);
    commsched_graph_destroy(g);
}

/* A bucketing pass replaces the graph: the result's graph is the new one
 * (merged collectives, copy-ins), its order and runtimes index it, it saves
 * and loads again, and the caller's graph is unchanged. */
static void test_bucketing(void)
{
    commsched_graph *g = make_graph(4, 2), *back = NULL;
    commsched_optimize_options *o = NULL;
    commsched_result *r = NULL;
    commsched_error err = {0};
    char *text = NULL;
    CHECK(g != NULL);
    if (!g)
        return;
    uint32_t n0 = commsched_graph_node_count(g);
    CHECK(commsched_optimize_options_create(&o, &err) == COMMSCHED_OK);
    CHECK(commsched_optimize_options_set(
              o, "passes",
              "bucket_all_gather,reorder_communication_preserving_peak_memory",
              &err) == COMMSCHED_OK);
    CHECK(commsched_optimize_options_set(o, "verify", "true", &err) ==
          COMMSCHED_OK);
    /* merged all-gathers hold their outputs longer: allow it */
    CHECK(commsched_optimize_options_set(o, "bucket_peak_memory_budget", "10",
                                         &err) == COMMSCHED_OK);
    CHECK(commsched_optimize(g, o, &r, &err) == COMMSCHED_OK);
    if (!r) {
        char msg[1024];
        fprintf(stderr, "bucketing: %s\n",
                commsched_error_format(&err, NULL, msg, sizeof msg));
        goto done;
    }
    const commsched_graph *rg = commsched_result_graph(r);
    const commsched_pass_stats *b =
        commsched_run_pass(commsched_result_run(r), 0);
    CHECK(b && b->kind == COMMSCHED_STATS_BUCKET && b->n_buckets >= 1);
    CHECK(b && b->graph == rg);
    CHECK(rg != g);
    uint32_t n = commsched_result_node_count(r);
    CHECK(n == commsched_graph_node_count(rg));
    CHECK(commsched_graph_node_count(g) == n0);
    for (uint32_t i = 0; i < n; i++) {
        const char *name = commsched_result_node_name(r, i);
        CHECK(name && commsched_graph_find_node(rg, name) ==
                          commsched_result_order(r)[i]);
        CHECK(commsched_result_runtimes(r)[i] >= 0);
    }
    if (b && b->n_buckets)
        CHECK(commsched_graph_find_node(rg, b->buckets[0].members[0]) ==
              COMMSCHED_NONE);
    FILE *f = tmpfile();
    if (f) {
        CHECK(commsched_graph_save_stream(rg, commsched_result_order(r), NULL,
                                          f, &err) == COMMSCHED_OK);
        long len = ftell(f);
        rewind(f);
        text = calloc(1, (size_t)len + 1);
        CHECK(text && fread(text, 1, (size_t)len, f) == (size_t)len);
        fclose(f);
        CHECK(text && commsched_graph_load_string(text, 0, &back, &err) ==
                          COMMSCHED_OK);
        CHECK(back && commsched_graph_node_count(back) == n);
    }
done:
    free(text);
    commsched_graph_destroy(back);
    commsched_result_destroy(r);
    commsched_optimize_options_destroy(o);
    commsched_graph_destroy(g);
}

int main(void)
{
    test_options();
    test_bucketing();
    test_save_roundtrip();
    test_threads();
    if (failures) {
        fprintf(stderr, "api_threads: %d check(s) failed\n", failures);
        return 1;
    }
    printf("api_threads: ok\n");
    return 0;
}
