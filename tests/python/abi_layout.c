/* Prints the size and field offsets of every struct the Python binding
 * mirrors with ctypes (python/commsched/_lib.py STRUCTS), as JSON, so
 * test_binding.py can prove the mirrors match the compiler's layout. */
#include <stddef.h>
#include <stdio.h>

#include <commsched/commsched.h>

#define BEGIN(T)                                                               \
    printf("%s\"" #T "\": {\"size\": %zu, \"fields\": {", first ? "" : ", ",   \
           sizeof(T));                                                         \
    first = 0;                                                                 \
    sep = "";
#define FIELD(T, f, py)                                                        \
    printf("%s\"" py "\": %zu", sep, offsetof(T, f));                          \
    sep = ", ";
#define END() printf("}}");

int main(void)
{
    int first = 1;
    const char *sep = "";
    printf("{");
    BEGIN(commsched_error)
    FIELD(commsched_error, status, "status")
    FIELD(commsched_error, line, "line")
    FIELD(commsched_error, column, "column")
    FIELD(commsched_error, path, "path")
    FIELD(commsched_error, text, "text")
    END()
    BEGIN(commsched_output_spec)
    FIELD(commsched_output_spec, name, "name")
    FIELD(commsched_output_spec, size, "size")
    FIELD(commsched_output_spec, alias_of, "alias_of")
    END()
    BEGIN(commsched_node_spec)
    FIELD(commsched_node_spec, name, "name")
    FIELD(commsched_node_spec, kind, "kind")
    FIELD(commsched_node_spec, op, "op")
    FIELD(commsched_node_spec, group, "group")
    FIELD(commsched_node_spec, is_sync, "is_sync")
    FIELD(commsched_node_spec, dtype, "dtype")
    FIELD(commsched_node_spec, reduce_op, "reduce_op")
    FIELD(commsched_node_spec, inputs, "inputs")
    FIELD(commsched_node_spec, n_inputs, "n_inputs")
    FIELD(commsched_node_spec, outputs, "outputs")
    FIELD(commsched_node_spec, n_outputs, "n_outputs")
    FIELD(commsched_node_spec, after, "after")
    FIELD(commsched_node_spec, n_after, "n_after")
    FIELD(commsched_node_spec, after_fake, "after_fake")
    FIELD(commsched_node_spec, n_after_fake, "n_after_fake")
    FIELD(commsched_node_spec, runtime_ns, "runtime_ns")
    FIELD(commsched_node_spec, flops, "flops")
    FIELD(commsched_node_spec, bytes, "bytes")
    FIELD(commsched_node_spec, gemm_like, "gemm_like")
    END()
    BEGIN(commsched_node_stats)
    FIELD(commsched_node_stats, node, "node")
    FIELD(commsched_node_stats, comm_time, "comm_time")
    FIELD(commsched_node_stats, comp_time, "comp_time")
    FIELD(commsched_node_stats, initial_exposed, "initial_exposed")
    FIELD(commsched_node_stats, final_exposed, "final_exposed")
    FIELD(commsched_node_stats, moves, "moves")
    FIELD(commsched_node_stats, grouped, "grouped")
    FIELD(commsched_node_stats, limiting_factor, "limiting_factor")
    FIELD(commsched_node_stats, grouped_info, "grouped_info")
    FIELD(commsched_node_stats, moves_info, "moves_info")
    FIELD(commsched_node_stats, overlap_info, "overlap_info")
    END()
    BEGIN(commsched_pass_stats)
    FIELD(commsched_pass_stats, pass, "pass_")
    FIELD(commsched_pass_stats, wall_ms, "wall_ms")
    FIELD(commsched_pass_stats, peak_before, "peak_before")
    FIELD(commsched_pass_stats, peak_after, "peak_after")
    FIELD(commsched_pass_stats, kind, "kind")
    FIELD(commsched_pass_stats, n_nodes, "n_nodes")
    FIELD(commsched_pass_stats, nodes, "nodes")
    FIELD(commsched_pass_stats, fake_edges_added, "fake_edges_added")
    FIELD(commsched_pass_stats, graph, "graph")
    FIELD(commsched_pass_stats, n_buckets, "n_buckets")
    FIELD(commsched_pass_stats, buckets, "buckets")
    FIELD(commsched_pass_stats, fake_edges_dropped, "fake_edges_dropped")
    END()
    BEGIN(commsched_bucket_stats)
    FIELD(commsched_bucket_stats, node, "node")
    FIELD(commsched_bucket_stats, copy_in, "copy_in")
    FIELD(commsched_bucket_stats, wait, "wait")
    FIELD(commsched_bucket_stats, n_members, "n_members")
    FIELD(commsched_bucket_stats, members, "members")
    FIELD(commsched_bucket_stats, bytes, "bytes")
    FIELD(commsched_bucket_stats, time_before_ns, "time_before_ns")
    FIELD(commsched_bucket_stats, time_after_ns, "time_after_ns")
    FIELD(commsched_bucket_stats, closed_by, "closed_by")
    END()
    BEGIN(commsched_sim_totals)
    FIELD(commsched_sim_totals, makespan_ns, "makespan_ns")
    FIELD(commsched_sim_totals, compute_ns, "compute_ns")
    FIELD(commsched_sim_totals, comm_ns, "comm_ns")
    FIELD(commsched_sim_totals, exposed_ns, "exposed_ns")
    FIELD(commsched_sim_totals, overlap, "overlap")
    FIELD(commsched_sim_totals, lower_bound_ns, "lower_bound_ns")
    FIELD(commsched_sim_totals, bound_compute_ns, "bound_compute_ns")
    FIELD(commsched_sim_totals, bound_comm_ns, "bound_comm_ns")
    FIELD(commsched_sim_totals, bound_comm_stream, "bound_comm_stream")
    FIELD(commsched_sim_totals, bound_path_ns, "bound_path_ns")
    FIELD(commsched_sim_totals, efficiency, "efficiency")
    FIELD(commsched_sim_totals, n_collectives, "n_collectives")
    FIELD(commsched_sim_totals, n_waits, "n_waits")
    FIELD(commsched_sim_totals, memory_baseline, "memory_baseline")
    FIELD(commsched_sim_totals, peak_memory, "peak_memory")
    FIELD(commsched_sim_totals, peak_memory_at_ns, "peak_memory_at_ns")
    FIELD(commsched_sim_totals, peak_memory_step, "peak_memory_step")
    FIELD(commsched_sim_totals, bound_stream_ns, "bound_stream_ns")
    FIELD(commsched_sim_totals, bound_stream, "bound_stream")
    END()
    printf("}\n");
    return 0;
}
