#pragma once
// The CUDA launcher, free of torch headers so that nvcc compiles the kernel in seconds.
#include <cuda_runtime.h>

#include <cstdint>

namespace rope {

enum class DType { f32, f16, bf16 };

// x and out are [batch, seq, heads, dim]; cos and sin are [seq, dim].
// out = x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[dim/2:], x[:dim/2]).
cudaError_t launch_rope(void* out, const void* x, const void* cos, const void* sin,
                        std::int64_t batch, std::int64_t seq, std::int64_t heads, std::int64_t dim,
                        DType dtype, cudaStream_t stream);

}  // namespace rope
