// The torch side of the CUDA kernel: checks, allocation, stream and dtype.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>

#include "geglu.h"
#include "torch_binding.h"

torch::Tensor geglu_cuda(const torch::Tensor& input) {
  TORCH_CHECK(input.is_cuda(), "geglu: input must be a CUDA tensor");
  TORCH_CHECK(input.is_contiguous(), "geglu: input must be contiguous");
  TORCH_CHECK(input.dim() >= 1, "geglu: input needs at least one dimension");
  const std::int64_t width = input.size(-1);
  TORCH_CHECK(width % 2 == 0, "geglu: the last dimension must be even, got ", width);
  geglu::DType dtype;
  switch (input.scalar_type()) {
    case at::kFloat:
      dtype = geglu::DType::f32;
      break;
    case at::kHalf:
      dtype = geglu::DType::f16;
      break;
    case at::kBFloat16:
      dtype = geglu::DType::bf16;
      break;
    default:
      TORCH_CHECK(false, "geglu: float32, float16 or bfloat16 input, got ", input.scalar_type());
  }
  const c10::cuda::CUDAGuard guard(input.device());
  std::vector<std::int64_t> shape(input.sizes().begin(), input.sizes().end());
  shape.back() = width / 2;
  torch::Tensor out = torch::empty(shape, input.options());
  const std::int64_t rows = width == 0 ? 0 : input.numel() / width;
  const cudaError_t err = geglu::launch_geglu(out.data_ptr(), input.data_ptr(), rows, width / 2,
                                              dtype, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "geglu: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}
