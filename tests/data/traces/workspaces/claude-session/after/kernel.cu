// RMSNorm for sm_90: one block per row.
#include <cuda_runtime.h>

__global__ void rms_norm_kernel(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ weight, int cols, float eps) {
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += in[blockIdx.x * cols + c] * in[blockIdx.x * cols + c];
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.f;
  __syncthreads();
  atomicAdd(&total, sum);
  __syncthreads();
  const float scale = rsqrtf(total / cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[blockIdx.x * cols + c] = in[blockIdx.x * cols + c] * scale * weight[c];
}
