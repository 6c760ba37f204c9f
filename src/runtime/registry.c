/* commsched — the runtime registry (QBE's name -> Target table) and the
 * small pieces of runtime.h that need no communication library: option
 * defaults, enum names, the measurement's destructor. Compiled in every
 * build, so `commsched run` exists without MPI and can say so. */
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

static const commsched_runtime_ops *const runtimes[] = {
#if COMMSCHED_HAVE_MPI
    &cs_runtime_mpi_ops,
#endif
#if COMMSCHED_HAVE_CUDA
    &cs_runtime_cuda_ops,
#endif
    NULL};

/* Every adaptor the project has, built here or not. */
static const char *const known[] = {"mpi", "cuda"};

const commsched_runtime_ops *commsched_runtime_at(unsigned i)
{
    /* A walk, not a size test: the table may hold only its NULL end. */
    for (unsigned k = 0; runtimes[k]; k++)
        if (k == i)
            return runtimes[k];
    return NULL;
}

const commsched_runtime_ops *commsched_runtime_find(const char *name)
{
    if (!name)
        return NULL;
    for (unsigned i = 0; runtimes[i]; i++)
        if (strcmp(runtimes[i]->name, name) == 0 &&
            runtimes[i]->version == COMMSCHED_RUNTIME_VERSION)
            return runtimes[i];
    return NULL;
}

int commsched_runtime_known(const char *name)
{
    for (size_t i = 0; name && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i], name) == 0)
            return 1;
    return 0;
}

static const char *const compute_names[] = {"sleep", "spin", "touch",
                                            "gemm"};
static const char *const allreduce_names[] = {"mpi", "ring", "ring-always"};

const char *commsched_compute_mode_str(commsched_compute_mode m)
{
    return (unsigned)m < 4 ? compute_names[m] : NULL;
}

int commsched_compute_mode_parse(const char *s, commsched_compute_mode *out)
{
    for (unsigned i = 0; s && i < 4; i++)
        if (strcmp(s, compute_names[i]) == 0) {
            *out = (commsched_compute_mode)i;
            return 0;
        }
    return -1;
}

const char *commsched_allreduce_algo_str(commsched_allreduce_algo a)
{
    return (unsigned)a < 3 ? allreduce_names[a] : NULL;
}

int commsched_allreduce_algo_parse(const char *s,
                                   commsched_allreduce_algo *out)
{
    for (unsigned i = 0; s && i < 3; i++)
        if (strcmp(s, allreduce_names[i]) == 0) {
            *out = (commsched_allreduce_algo)i;
            return 0;
        }
    return -1;
}

static const char *const streams_names[] = {"per-group", "single",
                                            "concurrent"};

const char *commsched_run_streams_str(commsched_run_streams s)
{
    return (unsigned)s < 3 ? streams_names[s] : NULL;
}

int commsched_run_streams_parse(const char *s, commsched_run_streams *out)
{
    for (unsigned i = 0; s && i < 3; i++)
        if (strcmp(s, streams_names[i]) == 0) {
            *out = (commsched_run_streams)i;
            return 0;
        }
    return -1;
}

void commsched_run_options_init(commsched_run_options *o)
{
    memset(o, 0, sizeof *o);
    o->compute = COMMSCHED_COMPUTE_SLEEP;
    o->time_scale = 1.0;
    o->size_scale = 1.0;
    o->allreduce = COMMSCHED_ALLREDUCE_MPI;
    o->ring_threshold = COMMSCHED_RING_THRESHOLD_DEFAULT;
    o->iters = 10;
    o->warmup = 2;
    o->calibrate = 3;
    o->timeout_s = 60.0;
    o->poll_us = 20.0;
    o->preflight = 1;
    o->debug_kill_rank = -1;
    o->debug_corrupt_rank = -1;
}

void commsched_measurement_destroy(commsched_measurement *m)
{
    if (!m)
        return;
    free(m->order);
    free(m->start_ns);
    free(m->end_ns);
    free(m->post_ns);
    free(m->step_ns);
    free(m->solo_ns);
    free(m->skew_ns);
    free(m->wake_ns);
    free(m->peak_live);
    free(m->pool_peak);
    free(m);
}
