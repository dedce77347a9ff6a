// Rotary position embedding for sm_90 (valid on sm_80). Each thread handles one vector (16 bytes)
// of the first half of a head and the matching vector of the second half, so both halves are read
// once: out1 = x1 * cos1 - x2 * sin1, out2 = x2 * cos2 + x1 * sin2.
#include "rope.h"
#include "vec.cuh"

namespace rope {

namespace {

template <typename T, int V>
struct Chunk {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ Chunk<T, V> load_chunk(const T* p) {
  if constexpr (V == Vec<T>::kSize) {
    const Vec<T> v = load(p);
    Chunk<T, V> c;
#pragma unroll
    for (int k = 0; k < V; ++k) c.v[k] = v.v[k];
    return c;
  } else {
    Chunk<T, V> c;
#pragma unroll
    for (int k = 0; k < V; ++k) c.v[k] = p[k];
    return c;
  }
}

template <typename T, int V>
__device__ __forceinline__ void store_chunk(T* p, const Chunk<T, V>& c) {
  if constexpr (V == Vec<T>::kSize) {
    Vec<T> v;
#pragma unroll
    for (int k = 0; k < V; ++k) v.v[k] = c.v[k];
    store(p, v);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) p[k] = c.v[k];
  }
}

// V = elements per thread: the 16-byte vector when dim/2 allows it, else 1.
template <typename T, int V>
__global__ void rope_kernel(T* __restrict__ out, const T* __restrict__ x, const T* __restrict__ cos,
                            const T* __restrict__ sin, std::int64_t tokens_heads, std::int64_t seq,
                            std::int64_t heads, std::int64_t dim) {
  const std::int64_t half = dim / 2;
  const std::int64_t per_head = half / V;
  const std::int64_t total = tokens_heads * per_head;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t head = i / per_head;  // index over batch * seq * heads
    const std::int64_t j = (i - head * per_head) * V;
    const std::int64_t s = (head / heads) % seq;
    const T* xh = x + head * dim;
    T* oh = out + head * dim;
    const T* c = cos + s * dim;
    const T* n = sin + s * dim;
    const auto x1 = load_chunk<T, V>(xh + j);
    const auto x2 = load_chunk<T, V>(xh + half + j);
    const auto c1 = load_chunk<T, V>(c + j);
    const auto c2 = load_chunk<T, V>(c + half + j);
    const auto s1 = load_chunk<T, V>(n + j);
    const auto s2 = load_chunk<T, V>(n + half + j);
    Chunk<T, V> o1, o2;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float a = to_float(x1.v[k]);
      const float b = to_float(x2.v[k]);
      o1.v[k] = from_float<T>(a * to_float(c1.v[k]) - b * to_float(s1.v[k]));
      o2.v[k] = from_float<T>(b * to_float(c2.v[k]) + a * to_float(s2.v[k]));
    }
    store_chunk<T, V>(oh + j, o1);
    store_chunk<T, V>(oh + half + j, o2);
  }
}

template <typename T>
cudaError_t launch(T* out, const T* x, const T* cos, const T* sin, std::int64_t batch,
                   std::int64_t seq, std::int64_t heads, std::int64_t dim, cudaStream_t stream) {
  constexpr int V = Vec<T>::kSize;
  constexpr int kThreads = 256;
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  // Both halves of every head start on a 16-byte boundary only when dim/2 is a multiple of V.
  const bool vector =
      (dim / 2) % V == 0 && aligned16(out) && aligned16(x) && aligned16(cos) && aligned16(sin);
  const std::int64_t tokens_heads = batch * seq * heads;
  const std::int64_t work = tokens_heads * (vector ? dim / 2 / V : dim / 2);
  const std::int64_t wanted = (work + kThreads - 1) / kThreads;
  const std::int64_t cap = static_cast<std::int64_t>(sms > 0 ? sms : 80) * 16;
  const unsigned blocks = static_cast<unsigned>(wanted < cap ? wanted : cap);
  if (vector)
    rope_kernel<T, V>
        <<<blocks, kThreads, 0, stream>>>(out, x, cos, sin, tokens_heads, seq, heads, dim);
  else
    rope_kernel<T, 1>
        <<<blocks, kThreads, 0, stream>>>(out, x, cos, sin, tokens_heads, seq, heads, dim);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_rope(void* out, const void* x, const void* cos, const void* sin,
                        std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t dim,
                        DType dtype, cudaStream_t stream) {
  if (batch == 0 || seq == 0 || heads == 0 || dim == 0) return cudaSuccess;
  switch (dtype) {
    case DType::f32:
      return launch(static_cast<float*>(out), static_cast<const float*>(x),
                    static_cast<const float*>(cos), static_cast<const float*>(sin), batch, seq,
                    heads, dim, stream);
    case DType::f16:
      return launch(static_cast<__half*>(out), static_cast<const __half*>(x),
                    static_cast<const __half*>(cos), static_cast<const __half*>(sin), batch, seq,
                    heads, dim, stream);
    case DType::bf16:
      return launch(static_cast<__nv_bfloat16*>(out), static_cast<const __nv_bfloat16*>(x),
                    static_cast<const __nv_bfloat16*>(cos), static_cast<const __nv_bfloat16*>(sin),
                    batch, seq, heads, dim, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace rope
