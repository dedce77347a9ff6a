#pragma once
// The CUDA launcher, free of torch headers so that nvcc compiles the kernel in seconds.
#include <cuda_runtime.h>

#include <cstdint>

namespace rmsnorm {

enum class DType { f32, f16, bf16 };

// out[r, :] = in[r, :] * rsqrt(mean(in[r, :]^2) + eps) * weight, fp32 accumulation.
cudaError_t launch_rms_norm(void* out, const void* in, const void* weight, std::int64_t rows,
                            std::int64_t cols, float eps, DType dtype, cudaStream_t stream);

}  // namespace rmsnorm
