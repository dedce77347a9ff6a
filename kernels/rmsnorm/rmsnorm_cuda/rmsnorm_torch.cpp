// The torch side of the CUDA kernel: checks, allocation, stream and dtype.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>

#include "rmsnorm.h"
#include "torch_binding.h"

torch::Tensor rms_norm_cuda(const torch::Tensor& input, const torch::Tensor& weight, double eps) {
  TORCH_CHECK(input.is_cuda() && weight.is_cuda(),
              "rms_norm: input and weight must be CUDA tensors");
  TORCH_CHECK(input.is_contiguous() && weight.is_contiguous(),
              "rms_norm: input and weight must be contiguous");
  TORCH_CHECK(input.dim() >= 1, "rms_norm: input needs at least one dimension");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == input.size(-1),
              "rms_norm: weight must have shape [", input.size(-1), "], got ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "rms_norm: weight dtype ",
              weight.scalar_type(), " differs from input dtype ", input.scalar_type());
  rmsnorm::DType dtype;
  switch (input.scalar_type()) {
    case at::kFloat:
      dtype = rmsnorm::DType::f32;
      break;
    case at::kHalf:
      dtype = rmsnorm::DType::f16;
      break;
    case at::kBFloat16:
      dtype = rmsnorm::DType::bf16;
      break;
    default:
      TORCH_CHECK(false, "rms_norm: float32, float16 or bfloat16 input, got ", input.scalar_type());
  }
  const c10::cuda::CUDAGuard guard(input.device());
  torch::Tensor out = torch::empty_like(input);
  const std::int64_t cols = input.size(-1);
  const std::int64_t rows = cols == 0 ? 0 : input.numel() / cols;
  const cudaError_t err =
      rmsnorm::launch_rms_norm(out.data_ptr(), input.data_ptr(), weight.data_ptr(), rows, cols,
                               static_cast<float>(eps), dtype, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "rms_norm: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}
