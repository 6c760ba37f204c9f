/* commsched unit tests — the cost model (docs/COST.md).
 *
 * The anchors are the worked values of reference/inductor-overlap-passes.md
 * §5 (Inductor's canonical model on Hopper / Ampere) and the ring latencies
 * of overlap-landscape.md §5 (NCCL's per-protocol tables). Derivations for
 * the canonical model, 64 MiB = 0.0625 GiB:
 *   AG 8 ranks H100: busBw = min(141, 2*300/3) = 141, algBw = 141*8/7;
 *     0.0625e9/161.142857 = 387854.6 ns + (6.6 + 7*0.6) us = 398654.6 ns.
 *   AG 8 ranks A100: busBw 87.7, algBw 100.228571: 623574.7 + 10800 ns.
 *   AR 8 ranks H100: busBw = min(141, 600/4) = 141, algBw = 141*8/14;
 *     775709.2 + (6.6 + 14*0.6) us = 790709.2 ns.
 *   RS 16 ranks (2 hosts): busBw = min(39, 2*25/4) = 12.5, algBw = 12.5*16/15;
 *     4687500 + (6.6 + 14*max(0.6, 1.0) + 1*2.7) us = 4710800 ns.
 *   AG 0 bytes 8 ranks: 6.6 + 7*0.6 = 10.8 us. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commsched/cost.h"
#include "commsched/memory.h"
#include "commsched/schedule.h"
#include "graph_internal.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)
#define HDR "{\"format\": \"commsched-graph\", \"version\": 1, "

static const commsched_device *dev(const char *name)
{
    const commsched_device *d = commsched_device_builtin(name);
    assert_non_null(d);
    return d;
}

static double price(const char *device, commsched_comm_model m,
                    commsched_coll_op op, double bytes, uint32_t ranks,
                    uint32_t hosts, commsched_coll_cost *out)
{
    commsched_coll_cost c;
    commsched_error err = {0};
    assert_int_equal(commsched_cost_collective(dev(device), m, op, bytes,
                                               ranks, hosts, &c, &err),
                     COMMSCHED_OK);
    if (out)
        *out = c;
    return c.time_ns;
}

/* |got - want| within tol, with a readable message. */
static void near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: got %.6f, want %.6f (+- %g)", what, got, want, tol);
}

/* ---- the worked values (reference §5), rounded as the reference prints */

static void test_cost_inductor_all_gather_64mib_8_hopper(void **state)
{
    (void)state;
    commsched_coll_cost c;
    double ns = price("h100", COMMSCHED_COMM_MODEL_INDUCTOR,
                      COMMSCHED_COLL_ALL_GATHER, 64 * MIB, 8, 0, &c);
    near(ns / 1e6, 0.3987, 0.00005, "AG 64 MiB / 8 on Hopper, ms");
    near(ns, 398654.6, 0.5, "exact ns");
    near(c.latency_ns, 10800, 1e-6, "latency");
    assert_int_equal(c.steps, 7);
    assert_int_equal(c.hosts, 1);
    near(c.bus_bw, 141.0, 1e-12, "bus bandwidth (LL cap)");
}

static void test_cost_inductor_all_gather_64mib_8_ampere(void **state)
{
    (void)state;
    double ns = price("a100", COMMSCHED_COMM_MODEL_INDUCTOR,
                      COMMSCHED_COLL_ALL_GATHER, 64 * MIB, 8, 0, NULL);
    near(ns / 1e6, 0.6344, 0.00005, "AG 64 MiB / 8 on Ampere, ms");
}

static void test_cost_inductor_all_reduce_64mib_8(void **state)
{
    (void)state;
    commsched_coll_cost c;
    double ns = price("h100", COMMSCHED_COMM_MODEL_INDUCTOR,
                      COMMSCHED_COLL_ALL_REDUCE, 64 * MIB, 8, 0, &c);
    near(ns / 1e6, 0.7907, 0.00005, "AR 64 MiB / 8, ms");
    near(c.latency_ns, 15000, 1e-6, "latency");
    assert_int_equal(c.steps, 14);
}

static void test_cost_inductor_reduce_scatter_64mib_16(void **state)
{
    (void)state;
    commsched_coll_cost c;
    double ns = price("h100", COMMSCHED_COMM_MODEL_INDUCTOR,
                      COMMSCHED_COLL_REDUCE_SCATTER, 64 * MIB, 16, 0, &c);
    near(ns / 1e6, 4.7108, 0.00005, "RS 64 MiB / 16, ms");
    near(ns, 4710800, 1e-3, "exact ns");
    assert_int_equal(c.hosts, 2);
    assert_int_equal(c.steps, 15);
    assert_int_equal(c.inter_steps, 1);
    near(c.bus_bw, 12.5, 1e-12, "inter-host bus bandwidth");
}

static void test_cost_latency_floor(void **state)
{
    (void)state;
    /* Both modes agree on the empty message: Ring LL is the fastest. */
    near(price("h100", COMMSCHED_COMM_MODEL_INDUCTOR,
               COMMSCHED_COLL_ALL_GATHER, 0, 8, 0, NULL),
         10800, 1e-6, "inductor floor");
    near(price("h100", COMMSCHED_COMM_MODEL_NCCL, COMMSCHED_COLL_ALL_GATHER,
               0, 8, 0, NULL),
         10800, 1e-6, "nccl floor");
}

/* overlap-landscape.md §5: 8 GPUs on NVLink, ring all-reduce latency. */
static void test_cost_nccl_ring_latency_per_protocol(void **state)
{
    (void)state;
    const double want[3] = {15000, 40600, 56000};
    for (int p = 0; p < COMMSCHED_PROTO_COUNT; p++) {
        commsched_coll_cost c;
        commsched_error err = {0};
        assert_int_equal(commsched_cost_collective_with(
                             dev("h100"), COMMSCHED_ALGO_RING,
                             (commsched_nccl_proto)p,
                             COMMSCHED_COLL_ALL_REDUCE, 0, 8, 1, &c, &err),
                         COMMSCHED_OK);
        near(c.time_ns, want[p], 1e-6,
             commsched_nccl_proto_str((commsched_nccl_proto)p));
    }
}

static void test_cost_nccl_picks_fastest(void **state)
{
    (void)state;
    commsched_coll_cost best;
    price("h100", COMMSCHED_COMM_MODEL_NCCL, COMMSCHED_COLL_ALL_REDUCE,
          64 * MIB, 8, 0, &best);
    for (int a = 0; a < COMMSCHED_ALGO_COUNT; a++)
        for (int p = 0; p < COMMSCHED_PROTO_COUNT; p++) {
            commsched_coll_cost c;
            commsched_error err = {0};
            assert_int_equal(commsched_cost_collective_with(
                                 dev("h100"), (commsched_nccl_algo)a,
                                 (commsched_nccl_proto)p,
                                 COMMSCHED_COLL_ALL_REDUCE, 64 * MIB, 8, 0,
                                 &c, &err),
                             COMMSCHED_OK);
            assert_true(best.time_ns <= c.time_ns);
        }
    /* Large messages go Simple; the floor goes LL. */
    assert_int_equal(best.proto, COMMSCHED_PROTO_SIMPLE);
    /* 64 MiB all-reduce on Hopper: Simple ring, 370 GB/s bus:
     * 67108864 / (370 * 8/14) + (8.4 + 14*3.4) us. */
    near(best.time_ns, 67108864.0 / (370.0 * 8 / 14) + 56000, 1e-3,
         "ring Simple");
    /* Tree serves all-reduces only. */
    commsched_coll_cost c;
    commsched_error err = {0};
    assert_int_equal(commsched_cost_collective_with(
                         dev("h100"), COMMSCHED_ALGO_TREE, COMMSCHED_PROTO_LL,
                         COMMSCHED_COLL_ALL_GATHER, 1, 8, 0, &c, &err),
                     COMMSCHED_EINVAL);
}

static void test_cost_steps_and_hosts(void **state)
{
    (void)state;
    commsched_coll_cost c;
    price("h100", COMMSCHED_COMM_MODEL_INDUCTOR, COMMSCHED_COLL_ALL_TO_ALL,
          MIB, 8, 0, &c);
    assert_int_equal(c.steps, 14); /* 2(n-1) */
    price("h100", COMMSCHED_COMM_MODEL_INDUCTOR, COMMSCHED_COLL_ALL_REDUCE,
          MIB, 32, 0, &c);
    assert_int_equal(c.hosts, 4);        /* ceil(32 / 8) */
    assert_int_equal(c.inter_steps, 8);  /* 2 * hosts */
    price("h100", COMMSCHED_COMM_MODEL_INDUCTOR, COMMSCHED_COLL_ALL_GATHER,
          MIB, 8, 2, &c);
    assert_int_equal(c.hosts, 2); /* the group's own host count wins */
    assert_int_equal(c.inter_steps, 1);
    /* More hosts, slower: the same bytes across 2 hosts cost more. */
    assert_true(price("h100", COMMSCHED_COMM_MODEL_NCCL,
                      COMMSCHED_COLL_ALL_GATHER, 64 * MIB, 8, 2, NULL) >
                price("h100", COMMSCHED_COMM_MODEL_NCCL,
                      COMMSCHED_COLL_ALL_GATHER, 64 * MIB, 8, 1, NULL));
    /* One rank: nothing to do. */
    assert_true(price("h100", COMMSCHED_COMM_MODEL_NCCL,
                      COMMSCHED_COLL_ALL_REDUCE, 64 * MIB, 1, 0, NULL) == 0);
    commsched_error err = {0};
    assert_int_equal(commsched_cost_collective(dev("h100"),
                                               COMMSCHED_COMM_MODEL_NCCL,
                                               COMMSCHED_COLL_ALL_REDUCE, 1, 4,
                                               5, &c, &err),
                     COMMSCHED_EINVAL);
    assert_int_equal(commsched_cost_collective(dev("h100"),
                                               COMMSCHED_COMM_MODEL_NCCL,
                                               COMMSCHED_COLL_ALL_REDUCE, -1,
                                               4, 0, &c, &err),
                     COMMSCHED_EINVAL); /* first error wins: still EINVAL */
}

static void test_cost_compute_roofline(void **state)
{
    (void)state;
    const commsched_device *h = dev("h100");
    commsched_cost_tuple t;
    /* 989.4 TFLOP at 989.4 TFLOP/s is one second. */
    near(commsched_cost_compute(h, 989.4e12, 1, &t), 1e9, 1e-3, "flops");
    near(t.computation_ns, 1e9, 1e-3, "tuple computation");
    near(t.latency_ns, 0, 0, "tuple latency");
    /* 3.35 TB at 3.35 TB/s, few flops: memory-bound, one second. */
    near(commsched_cost_compute(h, 1e6, 3.35e12, &t), 1e9, 1e-3, "bytes");
    near(t.bandwidth_ns, 1e9, 1e-3, "tuple bandwidth");
    near(commsched_cost_compute(h, -1, -1, NULL), 0, 0, "absent");
}

/* ---- node estimates: precedence, sources, bytes, tuple ------------------ */

static const char *node_graph =
    HDR "\"groups\": [{\"name\": \"dp\", \"size\": 8}],"
    "\"inputs\": [{\"name\": \"x\", \"size\": 1024, \"freeable\": true},"
    "             {\"name\": \"s\", \"size\": 1048576}],"
    "\"outputs\": [\"out\"],"
    "\"nodes\": ["
    " {\"name\": \"mm\", \"kind\": \"compute\", \"inputs\": [\"x\"],"
    "  \"outputs\": [{\"name\": \"y\", \"size\": 8388608}],"
    "  \"flops\": 989400000},"
    " {\"name\": \"ar\", \"kind\": \"collective\", \"op\": \"all_reduce\","
    "  \"group\": \"dp\", \"inputs\": [\"y\"],"
    "  \"outputs\": [{\"name\": \"y_ar\", \"alias_of\": \"y\"}]},"
    " {\"name\": \"ar_wait\", \"kind\": \"wait\", \"inputs\": [\"y_ar\"],"
    "  \"outputs\": [{\"name\": \"y_red\", \"alias_of\": \"y_ar\"}]},"
    " {\"name\": \"ag\", \"kind\": \"collective\", \"op\": \"all_gather\","
    "  \"group\": \"dp\", \"inputs\": [\"s\"],"
    "  \"outputs\": [{\"name\": \"full\", \"size\": 8388608}],"
    "  \"runtime_ns\": 5000},"
    " {\"name\": \"ag_wait\", \"kind\": \"wait\", \"inputs\": [\"full\"],"
    "  \"outputs\": [{\"name\": \"w\", \"alias_of\": \"full\"}]},"
    " {\"name\": \"glue\", \"kind\": \"compute\", \"inputs\": [\"y_red\"],"
    "  \"outputs\": [{\"name\": \"z\", \"size\": 16}]},"
    " {\"name\": \"out\", \"kind\": \"compute\", \"inputs\": [\"z\", \"w\"],"
    "  \"outputs\": [{\"name\": \"out\", \"size\": 64}], \"bytes\": 3350000,"
    "  \"runtime_ns\": 7}"
    "]}";

static void test_cost_node_sources_and_bytes(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(node_graph);
    commsched_cost_options o;
    commsched_cost_options_init(&o);
    commsched_error err = {0};
    commsched_node_cost nc;

    assert_int_equal(commsched_cost_node(g, tu_node(g, "mm"), &o, NULL, &nc,
                                         &err),
                     COMMSCHED_OK);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_MODEL);
    near(nc.runtime_ns, 1000, 1e-6, "mm: 0.9894 TFLOP on h100 = 1 ms / 1000");

    /* In-place all_reduce: bytes are the input's 8 MiB, not 16. */
    assert_int_equal(commsched_cost_node(g, tu_node(g, "ar"), &o, NULL, &nc,
                                         &err),
                     COMMSCHED_OK);
    near(nc.bytes, 8 * MIB, 0, "in-place all_reduce bytes");
    assert_int_equal(nc.source, COMMSCHED_SOURCE_MODEL);
    assert_true(nc.runtime_ns > 0 && nc.runtime_ns == nc.model_ns);
    near(nc.tuple.latency_ns + nc.tuple.bandwidth_ns, nc.runtime_ns, 1e-6,
         "collective = latency + bandwidth");

    /* all_gather: bytes = max(1 MiB in, 8 MiB out); the file's runtime
     * wins but the model's figure is still reported. */
    assert_int_equal(commsched_cost_node(g, tu_node(g, "ag"), &o, NULL, &nc,
                                         &err),
                     COMMSCHED_OK);
    near(nc.bytes, 8 * MIB, 0, "all_gather bytes");
    assert_int_equal(nc.source, COMMSCHED_SOURCE_FILE);
    near(nc.runtime_ns, 5000, 0, "file runtime");
    assert_true(nc.model_ns > 10000);

    assert_int_equal(commsched_cost_node(g, tu_node(g, "ag_wait"), &o, NULL,
                                         &nc, &err),
                     COMMSCHED_OK);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_NONE);
    near(nc.runtime_ns, 0, 0, "wait");

    assert_int_equal(commsched_cost_node(g, tu_node(g, "glue"), &o, NULL, &nc,
                                         &err),
                     COMMSCHED_OK);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_NONE);
    near(nc.runtime_ns, 0, 0, "compute without flops or bytes");

    assert_int_equal(commsched_cost_node(g, tu_node(g, "out"), &o, NULL, &nc,
                                         &err),
                     COMMSCHED_OK);
    assert_int_equal(nc.source, COMMSCHED_SOURCE_FILE);
    near(nc.runtime_ns, 7, 0, "file wins over bytes");
    near(nc.model_ns, 1000, 1e-6, "3.35 MB at 3.35 TB/s");

    /* The whole graph at once agrees node by node. */
    uint32_t n = commsched_graph_node_count(g);
    double *rt = calloc(n, sizeof *rt);
    commsched_cost_source *src = calloc(n, sizeof *src);
    assert_non_null(rt);
    assert_non_null(src);
    assert_int_equal(commsched_cost_graph(g, &o, rt, src, &err), COMMSCHED_OK);
    for (uint32_t v = 0; v < n; v++) {
        assert_int_equal(commsched_cost_node(g, v, &o, NULL, &nc, &err),
                         COMMSCHED_OK);
        assert_true(rt[v] == nc.runtime_ns);
        assert_int_equal(src[v], nc.source);
    }
    free(rt);
    free(src);
    commsched_graph_destroy(g);
}

static void test_cost_node_memory_delta(void **state)
{
    (void)state;
    commsched_graph *g = tu_graph_from_json(node_graph);
    commsched_schedule *s = NULL;
    commsched_memory *m = NULL;
    commsched_error err = {0};
    commsched_cost_options o;
    commsched_node_cost nc;
    commsched_cost_options_init(&o);
    assert_int_equal(commsched_schedule_create(g, NULL, &s, &err), COMMSCHED_OK);
    assert_int_equal(commsched_memory_create(s, &m, &err), COMMSCHED_OK);
    /* mm allocates y (8 MiB) and is the last reader of x (1 KiB). */
    assert_int_equal(commsched_cost_node(g, tu_node(g, "mm"), &o, m, &nc, &err),
                     COMMSCHED_OK);
    assert_int_equal(nc.tuple.memory_delta, 8388608 - 1024);
    /* glue is y's last reader (through the aliases) and allocates 16. */
    assert_int_equal(commsched_cost_node(g, tu_node(g, "glue"), &o, m, &nc,
                                         &err),
                     COMMSCHED_OK);
    assert_int_equal(nc.tuple.memory_delta, 16 - 8388608);
    commsched_memory_destroy(m);
    commsched_schedule_destroy(s);
    commsched_graph_destroy(g);
}

/* ---- device profiles ---------------------------------------------------- */

static void test_cost_builtin_profiles(void **state)
{
    (void)state;
    unsigned n = 0;
    for (const commsched_device *d; (d = commsched_device_builtin_at(n)); n++) {
        commsched_error err = {0};
        assert_int_equal(commsched_device_check(d, &err), COMMSCHED_OK);
        assert_ptr_equal(commsched_device_builtin(d->name), d);
    }
    assert_int_equal(n, 3);
    assert_null(commsched_device_builtin("h200"));
    commsched_device d;
    commsched_error err = {0};
    assert_int_equal(commsched_device_lookup("h200", &d, &err),
                     COMMSCHED_EINVAL);
    assert_non_null(strstr(err.text, "h100"));
}

static void load_ok(const char *json, commsched_device *d)
{
    commsched_error err = {0};
    if (commsched_device_load_string(json, d, &err) != COMMSCHED_OK)
        fail_msg("profile did not load: %s: %s", err.path, err.text);
}

/* Asserts the loader's status, path (or line) and a piece of the text. */
static void load_bad(const char *json, commsched_status st, const char *path,
                     int line, const char *text)
{
    commsched_device d;
    memset(&d, 0x5a, sizeof d);
    commsched_device before = d;
    commsched_error err = {0};
    assert_int_equal(commsched_device_load_string(json, &d, &err), st);
    assert_int_equal(err.status, st);
    if (path)
        assert_string_equal(err.path, path);
    if (line)
        assert_int_equal(err.line, line);
    if (text && !strstr(err.text, text))
        fail_msg("error text \"%s\" lacks \"%s\"", err.text, text);
    assert_memory_equal(&d, &before, sizeof d); /* untouched on failure */
}

static void test_cost_profile_file(void **state)
{
    (void)state;
    commsched_device d;
    /* Starting from a built-in: only the overrides change. */
    load_ok("{\"format\": \"commsched-device\", \"version\": 1,"
            " \"base\": \"h100\", \"name\": \"h100-pcie\","
            " \"intra_link\": \"pci\", \"peak_flops\": 756e12,"
            " \"nccl\": {\"hw_latency\": {\"pci\": {\"ring\": [1, 2, 3]}}}}",
            &d);
    assert_string_equal(d.name, "h100-pcie");
    assert_int_equal(d.intra_link, COMMSCHED_LINK_PCI);
    near(d.peak_flops, 756e12, 0, "override");
    near(d.mem_bw, 3.35e12, 0, "kept from base");
    near(d.hw_lat[COMMSCHED_LINK_PCI][COMMSCHED_ALGO_RING][2], 3, 0, "table");
    near(d.hw_lat[COMMSCHED_LINK_PCI][COMMSCHED_ALGO_TREE][2], 4.0, 0,
         "table row kept");
    /* Over PCI the per-step latency is PCI's. */
    commsched_coll_cost c;
    commsched_error err = {0};
    assert_int_equal(commsched_cost_collective(&d, COMMSCHED_COMM_MODEL_INDUCTOR,
                                               COMMSCHED_COLL_ALL_GATHER, 0, 8,
                                               1, &c, &err),
                     COMMSCHED_OK);
    near(c.latency_ns, (6.6 + 7 * 1.0) * 1e3, 1e-6, "PCI steps");

    /* Complete without a base. */
    load_ok("{\"name\": \"toy\", \"peak_flops\": 1e12, \"mem_bw\": 1e11,"
            " \"gpus_per_host\": 4, \"ll_max_bw\": [10, 5, 2],"
            " \"nccl\": {\"channels\": 2, \"bus_bw_intra\": 20,"
            "  \"bus_bw_inter\": 5, \"ll128_max_bw_per_channel\": 4,"
            "  \"tree_max_bw_per_channel\": 4}}",
            &d);
    assert_string_equal(d.name, "toy");
    assert_int_equal(d.gpus_per_host, 4);
    near(d.base_lat[COMMSCHED_ALGO_RING][0], 6.6, 0, "NCCL default");
    assert_int_equal(commsched_cost_collective(&d, COMMSCHED_COMM_MODEL_NCCL,
                                               COMMSCHED_COLL_ALL_GATHER, 0, 8,
                                               0, &c, &err),
                     COMMSCHED_OK);
    assert_int_equal(c.hosts, 2);

    load_bad("{\"base\": \"h100\", \"nccl\": {\"chanels\": 3}}",
             COMMSCHED_ESCHEMA, "nccl.chanels", 0, "unknown field");
    load_bad("{\"base\": \"h100\", \"nccl\": {\"hw_latency\": {\"nvlink\":"
             " {\"ring\": [1, 2, \"x\"]}}}}",
             COMMSCHED_ESCHEMA, "nccl.hw_latency.nvlink.ring[2]", 0,
             "expected a number");
    load_bad("{\"base\": \"h100\", \"ll_max_bw\": [1, 2]}", COMMSCHED_ESCHEMA,
             "ll_max_bw", 0, "3 numbers");
    load_bad("{\"base\": \"h100\", \"mem_bw\": 0}", COMMSCHED_ESCHEMA,
             "mem_bw", 0, "> 0");
    load_bad("{\"base\": \"h100\", \"nccl\": {\"base_latency\": {\"ring\":"
             " [1, -2, 3]}}}",
             COMMSCHED_ESCHEMA, "nccl.base_latency.ring[1]", 0, ">= 0");
    load_bad("{\"base\": \"h9000\"}", COMMSCHED_ESCHEMA, "base", 0,
             "built-in");
    load_bad("{\"name\": \"x\", \"peak_flops\": 1}", COMMSCHED_ESCHEMA,
             "mem_bw", 0, "missing required field");
    load_bad("{\"format\": \"commsched-graph\", \"base\": \"h100\"}",
             COMMSCHED_ESCHEMA, "format", 0, NULL);
    load_bad("{\"base\": \"h100\", \"gpus_per_host\": 0}", COMMSCHED_ESCHEMA,
             "gpus_per_host", 0, NULL);
    load_bad("{\"base\": \"h100\",\n \"name\": }", COMMSCHED_EPARSE, "", 2,
             NULL);
}

static void test_cost_profile_from_file(void **state)
{
    (void)state;
    char path[] = "/tmp/commsched_test_profileXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("{\"base\": \"a100\", \"name\": \"mine\"}", f);
    fclose(f);
    commsched_device d;
    commsched_error err = {0};
    assert_int_equal(commsched_device_lookup(path, &d, &err), COMMSCHED_OK);
    assert_string_equal(d.name, "mine");
    near(d.ll_max_bw[0], 87.7, 0, "a100 base");
    unlink(path);
    commsched_error_clear(&err);
    assert_int_equal(commsched_device_lookup(path, &d, &err), COMMSCHED_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_inductor_all_gather_64mib_8_hopper),
        cmocka_unit_test(test_cost_inductor_all_gather_64mib_8_ampere),
        cmocka_unit_test(test_cost_inductor_all_reduce_64mib_8),
        cmocka_unit_test(test_cost_inductor_reduce_scatter_64mib_16),
        cmocka_unit_test(test_cost_latency_floor),
        cmocka_unit_test(test_cost_nccl_ring_latency_per_protocol),
        cmocka_unit_test(test_cost_nccl_picks_fastest),
        cmocka_unit_test(test_cost_steps_and_hosts),
        cmocka_unit_test(test_cost_compute_roofline),
        cmocka_unit_test(test_cost_node_sources_and_bytes),
        cmocka_unit_test(test_cost_node_memory_delta),
        cmocka_unit_test(test_cost_builtin_profiles),
        cmocka_unit_test(test_cost_profile_file),
        cmocka_unit_test(test_cost_profile_from_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
