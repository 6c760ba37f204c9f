/* commsched — the CUDA adaptor's device code, callable from C. Internal;
 * built by nvcc only where the CUDA adaptor is. */
#ifndef COMMSCHED_RUNTIME_CUDA_KERNELS_H
#define COMMSCHED_RUNTIME_CUDA_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues a one-thread kernel that spins `cycles` SM clock cycles on
 * `stream`: a compute node of known length that occupies one SM and no
 * memory bandwidth, so collectives run beside it as they would beside a
 * kernel that leaves them room (the spin calibration turns ns into cycles).
 * Returns the launch's error. */
cudaError_t cs_cuda_spin(long long cycles, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* COMMSCHED_RUNTIME_CUDA_KERNELS_H */
