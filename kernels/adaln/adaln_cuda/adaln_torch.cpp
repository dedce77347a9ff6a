// The torch side of the CUDA kernel: checks, allocation, stream and dtype.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>

#include "adaln.h"
#include "torch_binding.h"

torch::Tensor adaln_modulate_cuda(const torch::Tensor& input, const torch::Tensor& scale,
                                  const torch::Tensor& shift, double eps) {
  TORCH_CHECK(input.is_cuda() && scale.is_cuda() && shift.is_cuda(),
              "adaln_modulate: input, scale and shift must be CUDA tensors");
  TORCH_CHECK(input.is_contiguous() && scale.is_contiguous() && shift.is_contiguous(),
              "adaln_modulate: input, scale and shift must be contiguous");
  TORCH_CHECK(input.dim() == 3, "adaln_modulate: input must be [batch, seq, hidden], got ",
              input.sizes());
  const std::int64_t batch = input.size(0), seq = input.size(1), hidden = input.size(2);
  TORCH_CHECK(scale.dim() == 2 && scale.size(0) == batch && scale.size(1) == hidden,
              "adaln_modulate: scale must be [", batch, ", ", hidden, "], got ", scale.sizes());
  TORCH_CHECK(shift.sizes() == scale.sizes(), "adaln_modulate: shift must have scale's shape ",
              scale.sizes(), ", got ", shift.sizes());
  TORCH_CHECK(
      scale.scalar_type() == input.scalar_type() && shift.scalar_type() == input.scalar_type(),
      "adaln_modulate: scale and shift must have the input's dtype ", input.scalar_type());
  adaln::DType dtype;
  switch (input.scalar_type()) {
    case at::kFloat:
      dtype = adaln::DType::f32;
      break;
    case at::kHalf:
      dtype = adaln::DType::f16;
      break;
    case at::kBFloat16:
      dtype = adaln::DType::bf16;
      break;
    default:
      TORCH_CHECK(false, "adaln_modulate: float32, float16 or bfloat16 input, got ",
                  input.scalar_type());
  }
  const c10::cuda::CUDAGuard guard(input.device());
  torch::Tensor out = torch::empty_like(input);
  const cudaError_t err = adaln::launch_adaln_modulate(
      out.data_ptr(), input.data_ptr(), scale.data_ptr(), shift.data_ptr(), batch, seq, hidden,
      static_cast<float>(eps), dtype, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess,
              "adaln_modulate: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}
