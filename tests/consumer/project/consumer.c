/* A compiler's view of commsched: build a 6-node training step with the
 * builder, optimize it with one call, check the new order, the statistics
 * and the simulator's totals. Built against an installed commsched only
 * (commsched/commsched.h), through CMake and through pkg-config.
 *
 * The step: mm1 -> relu -> mm2 -> upd on the compute side, and an
 * all-reduce of a gradient shard whose wait feeds upd. In the original
 * order the all-reduce is issued late and waited for at once (fully
 * exposed). The default pipeline (the overlap pass) issues it first (the
 * peak stays 16 MiB) and waits for it just before upd, so it hides
 * completely. */
#include <stdio.h>
#include <string.h>

#include <commsched/commsched.h>

#define MiB (1024 * 1024)

static int failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "consumer.c:%d: check failed: %s\n", __LINE__,     \
                    #cond);                                                    \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static commsched_status add(commsched_builder *b, const char *name,
                            commsched_node_kind kind, const char *op,
                            const char *in0, const char *in1,
                            const char *out, int64_t size,
                            const char *alias_of, double runtime_ns,
                            commsched_error *err)
{
    const char *inputs[2] = {in0, in1};
    commsched_output_spec output = {out, size, alias_of};
    commsched_node_spec spec = {0};
    spec.name = name;
    spec.kind = kind;
    spec.op = op;
    spec.group = kind == COMMSCHED_NODE_COLLECTIVE ? "dp" : NULL;
    spec.inputs = inputs;
    spec.n_inputs = in1 ? 2 : 1;
    spec.outputs = &output;
    spec.n_outputs = 1;
    spec.runtime_ns = runtime_ns;
    spec.flops = spec.bytes = -1;
    spec.gemm_like = op && strncmp(op, "mm", 2) == 0;
    return commsched_builder_add_node(b, &spec, err);
}

int main(void)
{
    commsched_error err = {0};
    commsched_builder *b = NULL;
    commsched_graph *g = NULL;
    commsched_optimize_options *opts = NULL;
    commsched_result *r = NULL;
    char msg[1024];

    /* Headers and library agree on the version. */
    CHECK(strcmp(commsched_version(), COMMSCHED_VERSION_STRING) == 0);
    CHECK(commsched_version_number() == COMMSCHED_VERSION_NUMBER);

    if (commsched_builder_create("consumer", &b, &err) != COMMSCHED_OK ||
        commsched_builder_add_group(b, "dp", 8, 1, &err) != COMMSCHED_OK ||
        commsched_builder_add_input(b, "x", 4 * MiB, 0, &err) != COMMSCHED_OK ||
        commsched_builder_add_input(b, "grad", 8 * MiB, 0, &err) !=
            COMMSCHED_OK ||
        add(b, "mm1", COMMSCHED_NODE_COMPUTE, "mm", "x", NULL, "h1", 4 * MiB,
            NULL, 50000, &err) != COMMSCHED_OK ||
        add(b, "relu", COMMSCHED_NODE_COMPUTE, "relu", "h1", NULL, "h2",
            4 * MiB, NULL, 10000, &err) != COMMSCHED_OK ||
        add(b, "ar", COMMSCHED_NODE_COLLECTIVE, "all_reduce", "grad", NULL,
            "grad_sum", 8 * MiB, NULL, 80000, &err) != COMMSCHED_OK ||
        add(b, "ar_wait", COMMSCHED_NODE_WAIT, NULL, "grad_sum", NULL,
            "grad_ready", 0, "grad_sum", 0, &err) != COMMSCHED_OK ||
        add(b, "mm2", COMMSCHED_NODE_COMPUTE, "mm", "h2", NULL, "h3", 4 * MiB,
            NULL, 50000, &err) != COMMSCHED_OK ||
        add(b, "upd", COMMSCHED_NODE_COMPUTE, "add", "grad_ready", "h3", "out",
            4 * MiB, NULL, 5000, &err) != COMMSCHED_OK ||
        commsched_builder_add_output(b, "out", &err) != COMMSCHED_OK) {
        commsched_builder_destroy(b);
        goto fail;
    }
    if (commsched_builder_finish(b, 0, &g, &err) != COMMSCHED_OK ||
        commsched_optimize_options_create(&opts, &err) != COMMSCHED_OK ||
        commsched_optimize_options_set(opts, "verify", "true", &err) !=
            COMMSCHED_OK ||
        commsched_optimize(g, opts, &r, &err) != COMMSCHED_OK)
        goto fail;

    static const char *const expected[] = {"ar",  "mm1",     "relu",
                                           "mm2", "ar_wait", "upd"};
    CHECK(commsched_result_node_count(r) == 6);
    for (uint32_t i = 0; i < 6; i++) {
        const char *name = commsched_result_node_name(r, i);
        printf("%s%s", i ? " " : "", name);
        CHECK(name && strcmp(name, expected[i]) == 0);
        CHECK(commsched_result_order(r)[i] ==
              commsched_graph_find_node(g, expected[i]));
    }
    printf("\n");
    CHECK(commsched_result_node_name(r, 6) == NULL);
    CHECK(strcmp(commsched_result_passes(r), commsched_default_pipeline()) ==
          0);

    const commsched_run *run = commsched_result_run(r);
    CHECK(commsched_run_pass_count(run) == 1);
    const commsched_pass_stats *ov = commsched_run_pass(run, 0);
    CHECK(ov && ov->kind == COMMSCHED_STATS_OVERLAP && ov->n_overlap == 1 &&
          ov->overlap[0].issue_before == 2 && ov->overlap[0].issue_after == 0 &&
          ov->overlap[0].hidden_after == 1.0 && ov->n_nodes == 1 &&
          ov->nodes[0].moves == 2);

    const commsched_sim_totals *before = commsched_result_before(r);
    const commsched_sim_totals *after = commsched_result_after(r);
    printf("makespan %.0f -> %.0f ns, exposed %.0f -> %.0f ns, peak %lld -> "
           "%lld bytes\n",
           before->makespan_ns, after->makespan_ns, before->exposed_ns,
           after->exposed_ns, (long long)before->peak_memory_step,
           (long long)after->peak_memory_step);
    CHECK(before->exposed_ns == 80000 && after->exposed_ns == 0);
    CHECK(after->makespan_ns < before->makespan_ns);
    CHECK(after->peak_memory_step <= before->peak_memory_step);

    /* A located error: an unknown knob names itself. */
    commsched_error e2 = {0};
    CHECK(commsched_optimize_options_set(opts, "no_such_knob", "1", &e2) ==
          COMMSCHED_EINVAL);
    CHECK(strcmp(e2.path, "no_such_knob") == 0);

    commsched_result_destroy(r);
    commsched_optimize_options_destroy(opts);
    commsched_graph_destroy(g);
    if (failures)
        return 1;
    printf("consumer: ok\n");
    return 0;
fail:
    fprintf(stderr, "consumer: %s\n",
            commsched_error_format(&err, NULL, msg, sizeof msg));
    commsched_result_destroy(r);
    commsched_optimize_options_destroy(opts);
    commsched_graph_destroy(g);
    return 1;
}
