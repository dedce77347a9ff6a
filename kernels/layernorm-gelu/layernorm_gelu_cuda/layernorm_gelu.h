#pragma once
// The CUDA launcher, free of torch headers so that nvcc compiles the kernel in seconds.
#include <cuda_runtime.h>

#include <cstdint>

namespace layernorm_gelu {

enum class DType { f32, f16, bf16 };

// out[r, :] = gelu_tanh((in[r, :] - mean) * rsqrt(var + eps) * weight + bias), fp32 math.
cudaError_t launch_layernorm_gelu(void* out, const void* in, const void* weight, const void* bias,
                                  std::int64_t rows, std::int64_t cols, float eps, DType dtype,
                                  cudaStream_t stream);

}  // namespace layernorm_gelu
