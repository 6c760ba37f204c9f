/* `commsched info --measured TRACE`: the comm/comp overlap a Kineto trace
 * measured, by Holistic Trace Analysis's definition (the share of NCCL
 * kernel time during which a compute kernel runs on the same GPU), beside
 * the same figure on commsched's simulated timeline of the graph imported
 * from that trace, in the run's order and in the order the default
 * pipeline chooses: "your run overlapped 20%; this order would overlap
 * 87%". One trace file is one rank. `report --measured TRACE` prints
 * the same and draws its page from the graph and the optimized order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commsched/passes.h"
#include "commsched/schedule.h"
#include "commsched/simulate.h"

/* HTA's figure on a simulated timeline: the compute time that ran while
 * each async collective was in flight (overlapped_ns), over the
 * collectives' time. NAN without collectives. */
static double sim_overlap(const commsched_graph *g, const commsched_sim *sim)
{
    const commsched_sim_node *nodes = commsched_sim_get_nodes(sim);
    double comm = 0, both = 0;
    for (uint32_t i = 0; i < commsched_graph_node_count(g); i++)
        if (commsched_graph_node_kind(g, i) == COMMSCHED_NODE_COLLECTIVE) {
            comm += nodes[i].end_ns - nodes[i].start_ns;
            both += nodes[i].overlapped_ns;
        }
    return comm > 0 ? both / comm : NAN;
}

static void pct(FILE *f, const char *label, double v)
{
    if (isnan(v))
        fprintf(f, "%s n/a (no NCCL kernel)\n", label);
    else
        fprintf(f, "%s %.2f%%\n", label, 100 * v);
}

int cli_measured_overlap(const char *trace, long rank, const cli_cost *cost,
                         FILE *f, commsched_graph **g_out,
                         commsched_schedule **s_out, commsched_run **run_out)
{
    commsched_import_options io;
    commsched_import_options_init(&io);
    io.rank = rank;
    cli_import ci;
    cli_import_begin(&ci, &io, trace);
    commsched_kineto *k = NULL;
    commsched_graph *g = NULL;
    commsched_schedule *s = NULL;
    commsched_sim *sim = NULL;
    commsched_run *run = NULL;
    commsched_knobs *knobs = NULL;
    double *runtime = NULL;
    commsched_error err = {0};
    int rc = 0;
    if (commsched_kineto_open(trace, &io, &k, &err) != COMMSCHED_OK) {
        rc = cli_report(NULL, &err);
        goto done;
    }
    double comm_us;
    double measured = commsched_kineto_overlap(k, &comm_us);
    long r = commsched_kineto_rank(k) >= 0 ? commsched_kineto_rank(k)
                                           : commsched_kineto_device(k);
    if (commsched_kineto_graph(k, &io, &g, &err) != COMMSCHED_OK) {
        rc = cli_report(NULL, &err);
        goto done;
    }
    if ((rc = cli_estimate(g, cost, &runtime, NULL)) != 0)
        goto done;
    if (commsched_sim_create(g, &sim, &err) != COMMSCHED_OK ||
        commsched_sim_run(sim, NULL, runtime, NULL, &err) != COMMSCHED_OK) {
        rc = cli_report(trace, &err);
        goto done;
    }
    double as_run = sim_overlap(g, sim);
    if (commsched_knobs_create(&knobs, &err) != COMMSCHED_OK ||
        commsched_schedule_create(g, NULL, &s, &err) != COMMSCHED_OK ||
        commsched_pipeline_run(g, s, runtime, commsched_default_pipeline(),
                               knobs, 0, &run, &err) != COMMSCHED_OK ||
        commsched_sim_run_schedule(sim, s, runtime, NULL, &err) !=
            COMMSCHED_OK) {
        rc = cli_report(trace, &err);
        goto done;
    }
    double optimized = sim_overlap(g, sim);
    fprintf(f,
            "%s: rank %ld (device %ld): comm/comp overlap, HTA's definition "
            "(share of NCCL kernel time with a compute kernel running)\n",
            strcmp(trace, "-") == 0 ? "<stdin>" : trace, r,
            commsched_kineto_device(k));
    char t[32];
    fprintf(f, "  NCCL kernel time:        %s\n",
            cli_time_ns(comm_us * 1000.0, t, sizeof t));
    pct(f, "  measured (the trace):   ", measured);
    pct(f, "  simulated, run's order: ", as_run);
    pct(f, "  simulated, optimized:   ", optimized);
    if (!isnan(measured) && !isnan(optimized))
        fprintf(f,
                "  your run overlapped %.0f%%; this order would overlap "
                "%.0f%%\n",
                100 * measured, 100 * optimized);
    if (g_out) {
        /* handed to the caller (report draws the page from them) */
        *g_out = g;
        *s_out = s;
        *run_out = run;
        g = NULL;
        s = NULL;
        run = NULL;
    }
done:
    commsched_run_destroy(run);
    commsched_knobs_destroy(knobs);
    commsched_sim_destroy(sim);
    commsched_schedule_destroy(s);
    free(runtime);
    commsched_graph_destroy(g);
    commsched_kineto_destroy(k);
    cli_import_end(&ci);
    return rc;
}
