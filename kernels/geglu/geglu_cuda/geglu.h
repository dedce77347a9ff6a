#pragma once
// The CUDA launcher, free of torch headers so that nvcc compiles the kernel in seconds.
#include <cuda_runtime.h>

#include <cstdint>

namespace geglu {

enum class DType { f32, f16, bf16 };

// in is [rows, 2 * half], out is [rows, half]: out[r, j] = in[r, j] * gelu_tanh(in[r, half + j]).
cudaError_t launch_geglu(void* out, const void* in, std::int64_t rows, std::int64_t half,
                         DType dtype, cudaStream_t stream);

}  // namespace geglu
