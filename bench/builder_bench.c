/* commsched bench — a step as a compiler hands it over: built node by node
 * through the public builder API (no JSON), then one commsched_optimize
 * call (cost model, simulation before, the default pipeline, simulation
 * after). Prints one JSON object: the wall time of each phase and the peak
 * resident set, so `make bench` can hold the library to issue 22's "1M
 * nodes in seconds and half a gigabyte" without any parser in the way.
 *
 * The step is DDP-shaped: per layer a matmul (reading the previous
 * activation and the layer's weight) writes the next activation and the
 * weight's gradient, an async all-reduce reduces the gradient and a wait
 * completes it; the reduced gradients are graph outputs.
 *
 *   usage: builder_bench [NODES [PASSES]]   (defaults 1000000, "default") */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "commsched/commsched.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double peak_rss_mib(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_maxrss / 1024.0; /* Linux: KiB */
}

/* prefix, the decimal digits of l, then suffix, into buf[32]. A compiler
 * has its names at hand; formatting them with snprintf was 38% of this
 * program's instructions, a cost that is the bench's, not the library's. */
static void name(char *buf, const char *prefix, long l, const char *suffix)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + l % 10);
        l /= 10;
    } while (l > 0);
    size_t k = strlen(prefix);
    memcpy(buf, prefix, k);
    while (n > 0)
        buf[k++] = digits[--n];
    strcpy(buf + k, suffix);
}

/* One layer: mm<l> (act<l-1>, w<l>) -> act<l>, gw<l>; ar<l>; wait<l>. */
static commsched_status add_layer(commsched_builder *b, long l,
                                  commsched_error *err)
{
    char mm[32], ar[32], wt[32], a0[32], a1[32], w[32], gw[32], aro[32],
        g[32];
    name(mm, "mm", l, "");
    name(ar, "ar", l, "");
    name(wt, "wait", l, "");
    name(a0, "act", l - 1, "");
    name(a1, "act", l, "");
    name(w, "w", l, "");
    name(gw, "gw", l, "");
    name(aro, "ar", l, "_out");
    name(g, "g", l, "");
    commsched_status st = commsched_builder_add_input(b, w, 32 << 20, 0, err);
    const char *mm_in[] = {a0, w};
    commsched_output_spec mm_out[] = {{a1, 16 << 20, NULL},
                                      {gw, 32 << 20, NULL}};
    commsched_node_spec s = {0};
    s.name = mm;
    s.kind = COMMSCHED_NODE_COMPUTE;
    s.op = "mm";
    s.gemm_like = 1;
    s.inputs = mm_in;
    s.n_inputs = 2;
    s.outputs = mm_out;
    s.n_outputs = 2;
    s.runtime_ns = -1;
    s.flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
    s.bytes = 3.0 * (32 << 20);
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_node(b, &s, err);
    const char *ar_in[] = {gw};
    commsched_output_spec ar_out[] = {{aro, 32 << 20, NULL}};
    memset(&s, 0, sizeof s);
    s.name = ar;
    s.kind = COMMSCHED_NODE_COLLECTIVE;
    s.op = "all_reduce";
    s.group = "dp";
    s.dtype = COMMSCHED_DTYPE_BFLOAT16;
    s.reduce_op = COMMSCHED_REDUCE_SUM;
    s.inputs = ar_in;
    s.n_inputs = 1;
    s.outputs = ar_out;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_node(b, &s, err);
    const char *wt_in[] = {aro};
    commsched_output_spec wt_out[] = {{g, 0, aro}};
    memset(&s, 0, sizeof s);
    s.name = wt;
    s.kind = COMMSCHED_NODE_WAIT;
    s.op = "wait_tensor";
    s.inputs = wt_in;
    s.n_inputs = 1;
    s.outputs = wt_out;
    s.n_outputs = 1;
    s.runtime_ns = s.flops = s.bytes = -1;
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_node(b, &s, err);
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_output(b, g, err);
    return st;
}

int main(int argc, char **argv)
{
    long nodes = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
    const char *passes = argc > 2 ? argv[2] : "default";
    long layers = nodes / 3 > 0 ? nodes / 3 : 1;
    commsched_error err = {0};
    commsched_builder *b = NULL;
    commsched_graph *g = NULL;
    commsched_optimize_options *o = NULL;
    commsched_result *r = NULL;

    double t0 = now_s();
    commsched_status st = commsched_builder_create("builder-bench", &b, &err);
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_group(b, "dp", 8, 1, &err);
    if (st == COMMSCHED_OK)
        st = commsched_builder_add_input(b, "act0", 16 << 20, 1, &err);
    for (long l = 1; st == COMMSCHED_OK && l <= layers; l++)
        st = add_layer(b, l, &err);
    if (st == COMMSCHED_OK)
        st = commsched_builder_finish(b, 0, &g, &err); /* consumes b */
    else
        commsched_builder_destroy(b);
    double t1 = now_s();
    double rss_built = peak_rss_mib();
    if (st == COMMSCHED_OK)
        st = commsched_optimize_options_create(&o, &err);
    if (st == COMMSCHED_OK)
        st = commsched_optimize_options_set(o, "passes", passes, &err);
    if (st == COMMSCHED_OK)
        st = commsched_optimize(g, o, &r, &err);
    double t2 = now_s();
    if (st != COMMSCHED_OK) {
        fprintf(stderr, "builder_bench: %s: %s\n", commsched_status_name(st),
                err.text);
        commsched_optimize_options_destroy(o);
        commsched_graph_destroy(g);
        return 1;
    }
    printf("{\"nodes\": %u, \"passes\": \"%s\", \"build_s\": %.3f, "
           "\"optimize_s\": %.3f, \"total_s\": %.3f, \"rss_built_mib\": %.0f, "
           "\"rss_peak_mib\": %.0f, \"makespan_before_ns\": %.0f, "
           "\"makespan_after_ns\": %.0f}\n",
           commsched_graph_node_count(g), passes, t1 - t0, t2 - t1, t2 - t0,
           rss_built, peak_rss_mib(),
           commsched_result_before(r)->makespan_ns,
           commsched_result_after(r)->makespan_ns);
    commsched_result_destroy(r);
    commsched_optimize_options_destroy(o);
    commsched_graph_destroy(g);
    return 0;
}
