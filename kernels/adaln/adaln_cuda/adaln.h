#pragma once
// The CUDA launcher, free of torch headers so that nvcc compiles the kernel in seconds.
#include <cuda_runtime.h>

#include <cstdint>

namespace adaln {

enum class DType { f32, f16, bf16 };

// in and out are [batch, seq, hidden], scale and shift [batch, hidden]:
// out[b, s, :] = layer_norm(in[b, s, :]) * (1 + scale[b, :]) + shift[b, :] (no affine, fp32 math).
cudaError_t launch_adaln_modulate(void* out, const void* in, const void* scale, const void* shift,
                                  std::int64_t batch, std::int64_t seq, std::int64_t hidden,
                                  float eps, DType dtype, cudaStream_t stream);

}  // namespace adaln
