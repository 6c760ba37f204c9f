/* commsched CLI — the passes' statistics as the seed prints them
 * (_format_and_log_reordering_stats / _format_and_log_sink_waits_stats):
 * an aligned table per pass; and the "schedule" object that carries them
 * (as JSON, from the library) into a saved graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* First line of a limiting factor; the seed's texts span lines. */
static void first_line(const char *s, char *buf, size_t size)
{
    size_t n = strcspn(s, "\n");
    if (n >= size)
        n = size - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

static void print_table(FILE *f, const commsched_graph *g,
                        const commsched_pass_stats *p)
{
    int sink = p->kind == COMMSCHED_STATS_SINK;
    double improvement = 0;
    uint32_t moves = 0;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        improvement += p->nodes[i].initial_exposed - p->nodes[i].final_exposed;
        moves += p->nodes[i].moves;
    }
    if (!sink)
        fprintf(f, "%s improved overlap by %.17g ns after %u reorder%s.\n",
                p->pass, improvement, moves, COMMSCHED_PLURAL(moves));
    else
        fprintf(f, "%s: %u wait%s, %u move%s, exposed time down %.17g ns\n",
                p->pass, p->n_nodes, COMMSCHED_PLURAL(p->n_nodes), moves,
                COMMSCHED_PLURAL(moves), improvement);
    fprintf(f, "%-28s %12s %12s %12s %12s %12s %6s %7s  %s\n",
            sink ? "Wait node" : "Collective node", "comm_time(us)",
            "comp_time(us)", "init exp(us)", "final exp(us)", "improv(us)",
            "moves", "grouped", "limiting factor");
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        const commsched_node_stats *r = &p->nodes[i];
        char lf[160];
        first_line(r->limiting_factor ? r->limiting_factor : "None", lf,
                   sizeof lf);
        fprintf(f, "%-28s %12.3f %12.3f %12.3f %12.3f %12.3f %6u %7u  %s\n",
                commsched_graph_node_name(g, r->node), r->comm_time / 1e3,
                r->comp_time / 1e3, r->initial_exposed / 1e3,
                r->final_exposed / 1e3,
                (r->initial_exposed - r->final_exposed) / 1e3, r->moves,
                r->grouped, lf);
    }
    fprintf(f, " peak_memory_before:%lld\n peak_memory_after:%lld\n",
            (long long)p->peak_before, (long long)p->peak_after);
}

/* One row per bucket: what merged, its size, its estimated time before
 * (the members' runtimes) and after (merged collective + copy-in), and why
 * it took no further member. */
static void print_buckets(FILE *f, const commsched_graph *g,
                          const commsched_pass_stats *p)
{
    uint32_t members = 0;
    double before = 0, after = 0;
    for (uint32_t i = 0; i < p->n_buckets; i++) {
        members += p->buckets[i].n_members;
        before += p->buckets[i].time_before_ns;
        after += p->buckets[i].time_after_ns;
    }
    if (p->n_buckets == 0)
        fprintf(f, "%s: no bucket formed\n", p->pass);
    else
        fprintf(f,
                "%s: %u collective%s into %u bucket%s, estimated %.3f us -> "
                "%.3f us\n",
                p->pass, members, COMMSCHED_PLURAL(members), p->n_buckets,
                COMMSCHED_PLURAL(p->n_buckets),
                before / 1e3, after / 1e3);
    if (p->fake_edges_dropped)
        fprintf(f, " %u after_fake edge%s the new order breaks %s dropped\n",
                p->fake_edges_dropped, COMMSCHED_PLURAL(p->fake_edges_dropped),
                p->fake_edges_dropped == 1 ? "was" : "were");
    if (p->n_buckets)
        fprintf(f, "%-24s %7s %12s %12s %12s %12s %-10s  %s\n", "Bucket",
                "members", "bytes", "before(us)", "after(us)", "saved(us)",
                "closed by", "members (wait order)");
    for (uint32_t i = 0; i < p->n_buckets; i++) {
        const commsched_bucket_stats *b = &p->buckets[i];
        char size[32];
        cli_bytes((double)b->bytes, size, sizeof size);
        fprintf(f, "%-24s %7u %12s %12.3f %12.3f %12.3f %-10s  %s",
                commsched_graph_node_name(g, b->node), b->n_members, size,
                b->time_before_ns / 1e3, b->time_after_ns / 1e3,
                (b->time_before_ns - b->time_after_ns) / 1e3, b->closed_by,
                b->members[0]);
        if (b->n_members > 2)
            fprintf(f, ", ... (%u more), ", b->n_members - 2);
        else
            fprintf(f, ", ");
        fprintf(f, "%s\n", b->members[b->n_members - 1]);
    }
    fprintf(f, " peak_memory_before:%lld\n peak_memory_after:%lld\n",
            (long long)p->peak_before, (long long)p->peak_after);
}

static void pos_text(uint32_t p, char *buf, size_t size)
{
    if (p == COMMSCHED_NONE)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%u", p);
}

/* One row per collective: where it is issued and waited before and after,
 * how much of it is hidden, and what kept it from hiding fully. */
static void print_overlap(FILE *f, const commsched_graph *g,
                          const commsched_pass_stats *p)
{
    double before = 0, after = 0, comm = 0;
    for (uint32_t i = 0; i < p->n_overlap; i++) {
        before += p->overlap[i].exposed_before_ns;
        after += p->overlap[i].exposed_after_ns;
        comm += p->overlap[i].comm_ns;
    }
    char budget[32], tbudget[32];
    if (p->overlap_budget_bytes < 0)
        snprintf(budget, sizeof budget, "none");
    else
        cli_bytes((double)p->overlap_budget_bytes, budget, sizeof budget);
    fprintf(f,
            "overlap: %u collective%s, exposed %.3f us -> %.3f us of %.3f us; "
            "order: %s (%u candidate%s, %u over the budget); peak budget %s",
            p->n_overlap, COMMSCHED_PLURAL(p->n_overlap), before / 1e3,
            after / 1e3, comm / 1e3,
            p->overlap_variant ? p->overlap_variant : "input",
            p->overlap_candidates, COMMSCHED_PLURAL(p->overlap_candidates),
            p->overlap_over_budget, budget);
    if (p->overlap_time_budget_bytes >= 0) {
        cli_bytes((double)p->overlap_time_budget_bytes, tbudget,
                  sizeof tbudget);
        fprintf(f, " per step, %s in time", tbudget);
    }
    fprintf(f, "; binds: %s\n",
            p->overlap_binds ? p->overlap_binds : "none");
    fprintf(f, "%-28s %12s %12s %12s %8s %15s %15s  %s\n", "Collective",
            "comm(us)", "exp before", "exp after", "hidden", "issue", "wait",
            "limited by");
    for (uint32_t i = 0; i < p->n_overlap; i++) {
        const commsched_overlap_stats *o = &p->overlap[i];
        char ib[16], ia[16], wb[16], wa[16], issue[40], wait[40];
        pos_text(o->issue_before, ib, sizeof ib);
        pos_text(o->issue_after, ia, sizeof ia);
        pos_text(o->wait_before, wb, sizeof wb);
        pos_text(o->wait_after, wa, sizeof wa);
        snprintf(issue, sizeof issue, "%s -> %s", ib, ia);
        snprintf(wait, sizeof wait, "%s -> %s", wb, wa);
        fprintf(f, "%-28s %12.3f %12.3f %12.3f %7.1f%% %15s %15s  %s\n",
                commsched_graph_node_name(g, o->node), o->comm_ns / 1e3,
                o->exposed_before_ns / 1e3, o->exposed_after_ns / 1e3,
                100 * o->hidden_after, issue, wait, o->limit);
    }
    fprintf(f, " peak_memory_before:%lld\n peak_memory_after:%lld\n",
            (long long)p->peak_before, (long long)p->peak_after);
    if (p->overlap_peak_time_before >= 0)
        fprintf(f, " peak_time_before:%lld\n peak_time_after:%lld\n",
                (long long)p->overlap_peak_time_before,
                (long long)p->overlap_peak_time_after);
}

void cli_print_pass_stats(FILE *f, const commsched_graph *g,
                          const commsched_run *run)
{
    for (size_t i = 0; i < commsched_run_pass_count(run); i++) {
        const commsched_pass_stats *p = commsched_run_pass(run, i);
        /* Node indices are the pass's own graph's (bucketing makes one). */
        const commsched_graph *pg = p->graph ? p->graph : g;
        fprintf(f, "== %s (%.2f ms)", p->pass, p->wall_ms);
        if (p->fake_edges_added)
            fprintf(f, ": %u fake edges added", p->fake_edges_added);
        fprintf(f, "\n");
        if (p->kind == COMMSCHED_STATS_BUCKET)
            print_buckets(f, pg, p);
        else if (p->kind == COMMSCHED_STATS_OVERLAP)
            print_overlap(f, pg, p);
        else if (p->kind != COMMSCHED_STATS_NONE)
            print_table(f, pg, p);
        else
            fprintf(f, " peak_memory_before:%lld\n peak_memory_after:%lld\n",
                    (long long)p->peak_before, (long long)p->peak_after);
    }
}
