// Fused LayerNorm + GELU(tanh) for sm_90 (valid on sm_80): one block per row, 16-byte vector
// loads when the row allows them, two-pass mean/variance in fp32 (the second pass reads the row
// from L1/L2), warp-shuffle and block reductions.
#include "layernorm_gelu.h"
#include "vec.cuh"

namespace layernorm_gelu {

namespace {

template <typename T, bool kVector>
__global__ void __launch_bounds__(1024)
    layernorm_gelu_kernel(T* __restrict__ out, const T* __restrict__ in,
                          const T* __restrict__ weight, const T* __restrict__ bias, int cols,
                          float eps) {
  __shared__ float scratch[32];
  const T* x = in + static_cast<std::int64_t>(blockIdx.x) * cols;
  T* y = out + static_cast<std::int64_t>(blockIdx.x) * cols;
  constexpr int V = Vec<T>::kSize;
  const int step = kVector ? blockDim.x * V : blockDim.x;
  const int first = kVector ? threadIdx.x * V : threadIdx.x;

  float sum = 0.f;
  for (int c = first; c < cols; c += step) {
    if constexpr (kVector) {
      const Vec<T> v = load(x + c);
#pragma unroll
      for (int k = 0; k < V; ++k) sum += to_float(v.v[k]);
    } else {
      sum += to_float(x[c]);
    }
  }
  const float mean = block_sum(sum, scratch) / static_cast<float>(cols);

  float squares = 0.f;
  for (int c = first; c < cols; c += step) {
    if constexpr (kVector) {
      const Vec<T> v = load(x + c);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float d = to_float(v.v[k]) - mean;
        squares += d * d;
      }
    } else {
      const float d = to_float(x[c]) - mean;
      squares += d * d;
    }
  }
  const float rstd = rsqrtf(block_sum(squares, scratch) / static_cast<float>(cols) + eps);

  for (int c = first; c < cols; c += step) {
    if constexpr (kVector) {
      const Vec<T> v = load(x + c);
      const Vec<T> w = load(weight + c);
      const Vec<T> b = load(bias + c);
      Vec<T> r;
#pragma unroll
      for (int k = 0; k < V; ++k)
        r.v[k] = from_float<T>(
            gelu_tanh((to_float(v.v[k]) - mean) * rstd * to_float(w.v[k]) + to_float(b.v[k])));
      store(y + c, r);
    } else {
      y[c] = from_float<T>(
          gelu_tanh((to_float(x[c]) - mean) * rstd * to_float(weight[c]) + to_float(bias[c])));
    }
  }
}

int threads_for(std::int64_t cols, int vec) {
  std::int64_t t = (cols + vec - 1) / vec;
  t = ((t + 31) / 32) * 32;
  return static_cast<int>(t < 64 ? 64 : (t > 1024 ? 1024 : t));
}

template <typename T>
cudaError_t launch(T* out, const T* in, const T* weight, const T* bias, std::int64_t rows,
                   std::int64_t cols, float eps, cudaStream_t stream) {
  constexpr int V = Vec<T>::kSize;
  const bool vector =
      cols % V == 0 && aligned16(out) && aligned16(in) && aligned16(weight) && aligned16(bias);
  const dim3 grid(static_cast<unsigned>(rows));
  const int threads = threads_for(cols, vector ? V : 1);
  const int n = static_cast<int>(cols);
  if (vector)
    layernorm_gelu_kernel<T, true><<<grid, threads, 0, stream>>>(out, in, weight, bias, n, eps);
  else
    layernorm_gelu_kernel<T, false><<<grid, threads, 0, stream>>>(out, in, weight, bias, n, eps);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_layernorm_gelu(void* out, const void* in, const void* weight, const void* bias,
                                  std::int64_t rows, std::int64_t cols, float eps, DType dtype,
                                  cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  switch (dtype) {
    case DType::f32:
      return launch(static_cast<float*>(out), static_cast<const float*>(in),
                    static_cast<const float*>(weight), static_cast<const float*>(bias), rows, cols,
                    eps, stream);
    case DType::f16:
      return launch(static_cast<__half*>(out), static_cast<const __half*>(in),
                    static_cast<const __half*>(weight), static_cast<const __half*>(bias), rows,
                    cols, eps, stream);
    case DType::bf16:
      return launch(static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(in),
                    static_cast<const __nv_bfloat16*>(weight),
                    static_cast<const __nv_bfloat16*>(bias), rows, cols, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace layernorm_gelu
