/* commsched unit tests — shared helpers: a small seeded PRNG, a random
 * VALID graph generator that goes through the public builder API, and
 * JSON helpers. Failures inside the helpers abort the calling test through
 * cmocka's fail_msg(), so callers get graphs, never errors. */
#ifndef COMMSCHED_TESTUTIL_H
#define COMMSCHED_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "commsched/graph.h"

/* splitmix64: tiny, seedable, identical on every platform. */
typedef struct tu_rng {
    uint64_t state;
} tu_rng;

void tu_rng_seed(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);
/* Uniform in [0, n); n must be > 0. */
uint32_t tu_rng_below(tu_rng *r, uint32_t n);
/* 1 with probability percent/100. */
int tu_rng_chance(tu_rng *r, uint32_t percent);

/* Shape of a random graph. Zero-initialise, or use tu_random_opts(). */
typedef struct tu_graph_opts {
    uint32_t n_nodes;      /* approximate: waits are added as needed */
    uint32_t fake_percent; /* chance a compute node gets an after_fake edge */
    uint32_t after_percent;/* chance a compute node gets an after edge */
    int no_in_place;       /* 1: no in-place all_reduces (an order that is
                              not the generated one may then read a buffer
                              while it is written, which loading rejects) */
} tu_graph_opts;

tu_graph_opts tu_random_opts(uint32_t n_nodes);

/* Builds a random valid graph through commsched_builder_*: several process
 * groups; freeable and non-freeable inputs (some unread); compute nodes
 * reading 1-3 earlier buffers (occasionally the same one twice), with view
 * aliases of what they read; async collectives, each completed later by a
 * wait whose output aliases the collective's output (consumers read the
 * alias); in-place all_reduces (output alias_of the input); sync
 * collectives; graph outputs (including a wait's alias); buffers nobody
 * reads; `after` and `after_fake` edges to earlier nodes. The order is
 * race-free (docs/FORMAT.md, "In-place writes"). Deterministic in seed.
 * Caller destroys. */
commsched_graph *tu_random_graph(uint64_t seed, const tu_graph_opts *opts);

/* Loads a graph from JSON text; fails the test with the error if it does
 * not load. Caller destroys. */
commsched_graph *tu_graph_from_json(const char *json);

/* Every node's runtime from the default cost model (h100, NCCL's model),
 * failing the test on error. Caller frees. */
double *tu_default_runtimes(const commsched_graph *g);

/* The order of schedule s as "a b c" (its nodes' names in g) into buf;
 * fails the test when it does not fit. */
#include "commsched/schedule.h"
void tu_order_text(const commsched_graph *g, const commsched_schedule *s,
                   char *buf, size_t size);
/* Fails the test, showing both, unless s's order is `want` ("a b c"). */
void tu_expect_order(const commsched_graph *g, const commsched_schedule *s,
                     const char *want);

/* Saves g (nodes in `order`, or the graph's order when NULL) to a malloc'ed
 * NUL-terminated string. Fails the test on error. Caller frees. */
char *tu_graph_to_json(const commsched_graph *g, const uint32_t *order);

/* A uniformly random topological order of g's nodes honouring data, after
 * and (when with_fake) after_fake edges, written to order[0..n). */
void tu_random_topo_order(const commsched_graph *g, uint64_t seed,
                          int with_fake, uint32_t *order);

/* Node index by name; fails the test when absent. */
uint32_t tu_node(const commsched_graph *g, const char *name);
/* Buffer index by name; fails the test when absent. */
uint32_t tu_buffer(const commsched_graph *g, const char *name);

#endif /* COMMSCHED_TESTUTIL_H */
