// AdaLN modulation for sm_90 (valid on sm_80): one block per token, 16-byte vector loads when the
// row allows them, two-pass mean/variance in fp32, warp-shuffle and block reductions.
#include "adaln.h"
#include "vec.cuh"

namespace adaln {

namespace {

template <typename T, bool kVector>
__global__ void __launch_bounds__(1024)
    adaln_kernel(T* __restrict__ out, const T* __restrict__ in, const T* __restrict__ scale,
                 const T* __restrict__ shift, int seq, int cols, float eps) {
  __shared__ float scratch[32];
  const std::int64_t row = blockIdx.x;
  const T* x = in + row * cols;
  T* y = out + row * cols;
  const T* sc = scale + (row / seq) * cols;
  const T* sh = shift + (row / seq) * cols;
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
      const Vec<T> a = load(sc + c);
      const Vec<T> b = load(sh + c);
      Vec<T> r;
#pragma unroll
      for (int k = 0; k < V; ++k)
        r.v[k] = from_float<T>((to_float(v.v[k]) - mean) * rstd * (1.f + to_float(a.v[k])) +
                               to_float(b.v[k]));
      store(y + c, r);
    } else {
      y[c] =
          from_float<T>((to_float(x[c]) - mean) * rstd * (1.f + to_float(sc[c])) + to_float(sh[c]));
    }
  }
}

int threads_for(std::int64_t cols, int vec) {
  std::int64_t t = (cols + vec - 1) / vec;
  t = ((t + 31) / 32) * 32;
  return static_cast<int>(t < 64 ? 64 : (t > 1024 ? 1024 : t));
}

template <typename T>
cudaError_t launch(T* out, const T* in, const T* scale, const T* shift, std::int64_t batch,
                   std::int64_t seq, std::int64_t hidden, float eps, cudaStream_t stream) {
  constexpr int V = Vec<T>::kSize;
  const bool vector =
      hidden % V == 0 && aligned16(out) && aligned16(in) && aligned16(scale) && aligned16(shift);
  const dim3 grid(static_cast<unsigned>(batch * seq));
  const int threads = threads_for(hidden, vector ? V : 1);
  const int s = static_cast<int>(seq), h = static_cast<int>(hidden);
  if (vector)
    adaln_kernel<T, true><<<grid, threads, 0, stream>>>(out, in, scale, shift, s, h, eps);
  else
    adaln_kernel<T, false><<<grid, threads, 0, stream>>>(out, in, scale, shift, s, h, eps);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_adaln_modulate(void* out, const void* in, const void* scale, const void* shift,
                                  std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                                  float eps, DType dtype, cudaStream_t stream) {
  if (batch == 0 || seq == 0 || hidden == 0) return cudaSuccess;
  switch (dtype) {
    case DType::f32:
      return launch(static_cast<float*>(out), static_cast<const float*>(in),
                    static_cast<const float*>(scale), static_cast<const float*>(shift), batch, seq,
                    hidden, eps, stream);
    case DType::f16:
      return launch(static_cast<__half*>(out), static_cast<const __half*>(in),
                    static_cast<const __half*>(scale), static_cast<const __half*>(shift), batch,
                    seq, hidden, eps, stream);
    case DType::bf16:
      return launch(static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(in),
                    static_cast<const __nv_bfloat16*>(scale),
                    static_cast<const __nv_bfloat16*>(shift), batch, seq, hidden, eps, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace adaln
