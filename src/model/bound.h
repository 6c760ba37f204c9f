/* commsched — the stream bound (bound.c): a lower bound on the makespan of
 * every order the simulator accepts. Internal to the model layer. */
#ifndef COMMSCHED_BOUND_H
#define COMMSCHED_BOUND_H

#include <stdint.h>

#include "graph_layout.h"

/* The largest, over the compute stream and the comm streams (one per
 * group, or one shared when `single`), of Jackson's preemptive schedule of
 * the stream's nodes with heads and tails from the edges every order
 * enforces. `order` is any order the simulator accepts (a topological
 * order of data and `after` edges); the result does not depend on which.
 * rt: runtimes by node. *stream: the stream that sets it (0 compute, then
 * the comm streams; COMMSCHED_NONE for an empty graph). Returns 0, or -1
 * when out of memory. */
int cs_stream_bound(const commsched_graph *g, const uint32_t *order,
                    const double *rt, int single, double *bound,
                    uint32_t *stream);

#endif /* COMMSCHED_BOUND_H */
