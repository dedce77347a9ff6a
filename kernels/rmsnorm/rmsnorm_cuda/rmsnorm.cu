// RMSNorm for sm_90 (valid on sm_80): one block per row, 16-byte vector loads when the row allows
// them, fp32 accumulation with warp-shuffle and block reductions.
#include "rmsnorm.h"
#include "vec.cuh"

namespace rmsnorm {

namespace {

template <typename T, bool kVector>
__global__ void __launch_bounds__(1024)
    rms_norm_kernel(T* __restrict__ out, const T* __restrict__ in, const T* __restrict__ weight,
                    int cols, float eps) {
  __shared__ float scratch[32];
  const T* x = in + static_cast<std::int64_t>(blockIdx.x) * cols;
  T* y = out + static_cast<std::int64_t>(blockIdx.x) * cols;
  constexpr int V = Vec<T>::kSize;

  float sum = 0.f;
  if constexpr (kVector) {
    for (int c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
      const Vec<T> v = load(x + c);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float f = to_float(v.v[k]);
        sum += f * f;
      }
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
      const float f = to_float(x[c]);
      sum += f * f;
    }
  }
  const float scale = rsqrtf(block_sum(sum, scratch) / static_cast<float>(cols) + eps);

  if constexpr (kVector) {
    for (int c = threadIdx.x * V; c < cols; c += blockDim.x * V) {
      const Vec<T> v = load(x + c);
      const Vec<T> w = load(weight + c);
      Vec<T> r;
#pragma unroll
      for (int k = 0; k < V; ++k)
        r.v[k] = from_float<T>(to_float(v.v[k]) * scale * to_float(w.v[k]));
      store(y + c, r);
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      y[c] = from_float<T>(to_float(x[c]) * scale * to_float(weight[c]));
  }
}

// Threads per row: enough to cover the row in one vector pass, a multiple of 32, 64..1024.
int threads_for(std::int64_t cols, int vec) {
  std::int64_t t = (cols + vec - 1) / vec;
  t = ((t + 31) / 32) * 32;
  return static_cast<int>(t < 64 ? 64 : (t > 1024 ? 1024 : t));
}

template <typename T>
cudaError_t launch(T* out, const T* in, const T* weight, std::int64_t rows, std::int64_t cols,
                   float eps, cudaStream_t stream) {
  constexpr int V = Vec<T>::kSize;
  // Every row start is 16-byte aligned only when the row length is a multiple of the vector.
  const bool vector = cols % V == 0 && aligned16(out) && aligned16(in) && aligned16(weight);
  const dim3 grid(static_cast<unsigned>(rows));
  const int threads = threads_for(cols, vector ? V : 1);
  if (vector)
    rms_norm_kernel<T, true>
        <<<grid, threads, 0, stream>>>(out, in, weight, static_cast<int>(cols), eps);
  else
    rms_norm_kernel<T, false>
        <<<grid, threads, 0, stream>>>(out, in, weight, static_cast<int>(cols), eps);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_rms_norm(void* out, const void* in, const void* weight, std::int64_t rows,
                            std::int64_t cols, float eps, DType dtype, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dtype) {
    case DType::f32:
      return launch(static_cast<float*>(out), static_cast<const float*>(in),
                    static_cast<const float*>(weight), rows, cols, eps, stream);
    case DType::f16:
      return launch(static_cast<__half*>(out), static_cast<const __half*>(in),
                    static_cast<const __half*>(weight), rows, cols, eps, stream);
    case DType::bf16:
      return launch(static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(in),
                    static_cast<const __nv_bfloat16*>(weight), rows, cols, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace rmsnorm
