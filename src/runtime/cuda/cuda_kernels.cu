// commsched — the CUDA adaptor's kernels (cuda_kernels.h).
#include "cuda_kernels.h"

// clock64 counts the SM's cycles; the loop re-reads it, so the kernel lasts
// `cycles` whatever the instruction mix costs.
__global__ void cs_spin_kernel(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

extern "C" cudaError_t cs_cuda_spin(long long cycles, cudaStream_t stream)
{
    cs_spin_kernel<<<1, 1, 0, stream>>>(cycles);
    return cudaGetLastError();
}
