/* commsched CLI — the passes' statistics as the seed prints them
 * (_format_and_log_reordering_stats / _format_and_log_sink_waits_stats):
 * an aligned table per pass, or one JSON document for all passes. */
#include <jansson.h>
#include <stdio.h>
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
        fprintf(f, "%s improved overlap by %.17g ns after %u reorders.\n",
                p->pass, improvement, moves);
    else
        fprintf(f, "%s: %u waits, %u moves, exposed time down %.17g ns\n",
                p->pass, p->n_nodes, moves, improvement);
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

void cli_print_pass_stats(FILE *f, const commsched_graph *g,
                          const commsched_run *run)
{
    for (size_t i = 0; i < commsched_run_pass_count(run); i++) {
        const commsched_pass_stats *p = commsched_run_pass(run, i);
        fprintf(f, "== %s (%.2f ms)", p->pass, p->wall_ms);
        if (p->fake_edges_added)
            fprintf(f, ": %u fake edges added", p->fake_edges_added);
        fprintf(f, "\n");
        if (p->kind != COMMSCHED_STATS_NONE)
            print_table(f, g, p);
        else
            fprintf(f, " peak_memory_before:%lld\n peak_memory_after:%lld\n",
                    (long long)p->peak_before, (long long)p->peak_after);
    }
}

static json_t *row_json(const commsched_graph *g, const commsched_node_stats *r,
                        int sink)
{
    json_t *o = json_pack(
        "{s:s, s:f, s:f, s:f, s:f, s:f, s:s, s:i, s:i, s:s, s:s}", "node",
        commsched_graph_node_name(g, r->node), "comm_time_ns", r->comm_time,
        "comp_time_ns", r->comp_time, "initial_exposed_ns", r->initial_exposed,
        "final_exposed_ns", r->final_exposed, "improvement_ns",
        r->initial_exposed - r->final_exposed, "limiting_factor",
        r->limiting_factor ? r->limiting_factor : "None", "moves",
        (json_int_t)r->moves, "grouped", (json_int_t)r->grouped,
        "grouped_info", r->grouped_info ? r->grouped_info : "",
        "overlap_info", r->overlap_info ? r->overlap_info : "");
    if (o && sink)
        json_object_set_new(o, "moves_info",
                            json_string(r->moves_info ? r->moves_info : ""));
    return o;
}

json_t *cli_pass_stats_json(const commsched_graph *g, const commsched_run *run,
                            int with_timing)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < commsched_run_pass_count(run); i++) {
        const commsched_pass_stats *p = commsched_run_pass(run, i);
        json_t *rows = json_array();
        for (uint32_t k = 0; rows && k < p->n_nodes; k++)
            json_array_append_new(
                rows, row_json(g, &p->nodes[k], p->kind == COMMSCHED_STATS_SINK));
        json_t *o = json_pack("{s:s, s:I, s:I, s:i, s:o}", "pass", p->pass,
                              "peak_memory_before", (json_int_t)p->peak_before,
                              "peak_memory_after", (json_int_t)p->peak_after,
                              "fake_edges_added",
                              (json_int_t)p->fake_edges_added, "nodes",
                              rows ? rows : json_array());
        if (o && with_timing)
            json_object_set_new(o, "wall_ms", json_real(p->wall_ms));
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}
