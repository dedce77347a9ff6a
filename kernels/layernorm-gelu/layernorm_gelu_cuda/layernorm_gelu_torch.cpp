// The torch side of the CUDA kernel: checks, allocation, stream and dtype.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>

#include "layernorm_gelu.h"
#include "torch_binding.h"

torch::Tensor layernorm_gelu_cuda(const torch::Tensor& input, const torch::Tensor& weight,
                                  const torch::Tensor& bias, double eps) {
  TORCH_CHECK(input.is_cuda() && weight.is_cuda() && bias.is_cuda(),
              "layernorm_gelu: input, weight and bias must be CUDA tensors");
  TORCH_CHECK(input.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(),
              "layernorm_gelu: input, weight and bias must be contiguous");
  TORCH_CHECK(input.dim() >= 1, "layernorm_gelu: input needs at least one dimension");
  const std::int64_t cols = input.size(-1);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == cols,
              "layernorm_gelu: weight must have shape [", cols, "], got ", weight.sizes());
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == cols, "layernorm_gelu: bias must have shape [",
              cols, "], got ", bias.sizes());
  TORCH_CHECK(
      weight.scalar_type() == input.scalar_type() && bias.scalar_type() == input.scalar_type(),
      "layernorm_gelu: weight and bias must have the input's dtype ", input.scalar_type());
  layernorm_gelu::DType dtype;
  switch (input.scalar_type()) {
    case at::kFloat:
      dtype = layernorm_gelu::DType::f32;
      break;
    case at::kHalf:
      dtype = layernorm_gelu::DType::f16;
      break;
    case at::kBFloat16:
      dtype = layernorm_gelu::DType::bf16;
      break;
    default:
      TORCH_CHECK(false, "layernorm_gelu: float32, float16 or bfloat16 input, got ",
                  input.scalar_type());
  }
  const c10::cuda::CUDAGuard guard(input.device());
  torch::Tensor out = torch::empty_like(input);
  const std::int64_t rows = cols == 0 ? 0 : input.numel() / cols;
  const cudaError_t err = layernorm_gelu::launch_layernorm_gelu(
      out.data_ptr(), input.data_ptr(), weight.data_ptr(), bias.data_ptr(), rows, cols,
      static_cast<float>(eps), dtype, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess,
              "layernorm_gelu: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}
