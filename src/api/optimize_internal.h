/* commsched — what tune shares with optimize inside the api layer. */
#ifndef COMMSCHED_OPTIMIZE_INTERNAL_H
#define COMMSCHED_OPTIMIZE_INTERNAL_H

#include "commsched/commsched.h"

/* commsched_optimize with the input's runtimes (g's node count of them, as
 * commsched_cost_graph prices g under o's device and model) and its
 * simulated totals (with the stream bound, under o's comm streams) given:
 * tune judges dozens of candidates on one graph, and pricing and
 * simulating the same input for each of them cost as much as a pass. Both
 * NULL: computed, as commsched_optimize does. The caller keeps ownership of
 * both; on failure *out is NULL. */
commsched_status cs_optimize_given(const commsched_graph *g,
                                   const commsched_optimize_options *o,
                                   const double *runtime,
                                   const commsched_sim_totals *before,
                                   commsched_result **out,
                                   commsched_error *err);

#endif
