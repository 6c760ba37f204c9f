/* commsched — the adaptors this build compiled in, for the registry
 * (registry.c). Internal. */
#ifndef COMMSCHED_RUNTIME_INTERNAL_H
#define COMMSCHED_RUNTIME_INTERNAL_H

#include "commsched/config.h"
#include "commsched/runtime.h"

#if COMMSCHED_HAVE_MPI
extern const commsched_runtime_ops cs_runtime_mpi_ops;
#endif
#if COMMSCHED_HAVE_CUDA
extern const commsched_runtime_ops cs_runtime_cuda_ops;
#endif

#endif /* COMMSCHED_RUNTIME_INTERNAL_H */
