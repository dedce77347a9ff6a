// The torch side of the CUDA kernel: checks, allocation, stream and dtype.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>

#include "rope.h"
#include "torch_binding.h"

torch::Tensor apply_rope_cuda(const torch::Tensor& x, const torch::Tensor& cos,
                              const torch::Tensor& sin) {
  TORCH_CHECK(x.is_cuda() && cos.is_cuda() && sin.is_cuda(),
              "apply_rope: x, cos and sin must be CUDA tensors");
  TORCH_CHECK(x.is_contiguous() && cos.is_contiguous() && sin.is_contiguous(),
              "apply_rope: x, cos and sin must be contiguous");
  TORCH_CHECK(x.dim() == 4, "apply_rope: x must be [batch, seq, heads, head_dim], got ", x.sizes());
  const std::int64_t seq = x.size(1), dim = x.size(3);
  TORCH_CHECK(dim % 2 == 0, "apply_rope: head_dim must be even, got ", dim);
  TORCH_CHECK(cos.dim() == 2 && cos.size(0) == seq && cos.size(1) == dim,
              "apply_rope: cos must be [", seq, ", ", dim, "], got ", cos.sizes());
  TORCH_CHECK(sin.sizes() == cos.sizes(), "apply_rope: sin must have cos's shape ", cos.sizes(),
              ", got ", sin.sizes());
  TORCH_CHECK(cos.scalar_type() == x.scalar_type() && sin.scalar_type() == x.scalar_type(),
              "apply_rope: cos and sin must have x's dtype ", x.scalar_type());
  rope::DType dtype;
  switch (x.scalar_type()) {
    case at::kFloat:
      dtype = rope::DType::f32;
      break;
    case at::kHalf:
      dtype = rope::DType::f16;
      break;
    case at::kBFloat16:
      dtype = rope::DType::bf16;
      break;
    default:
      TORCH_CHECK(false, "apply_rope: float32, float16 or bfloat16 input, got ", x.scalar_type());
  }
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor out = torch::empty_like(x);
  const cudaError_t err =
      rope::launch_rope(out.data_ptr(), x.data_ptr(), cos.data_ptr(), sin.data_ptr(), x.size(0),
                        seq, x.size(2), dim, dtype, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "apply_rope: kernel launch failed: ", cudaGetErrorString(err));
  return out;
}
