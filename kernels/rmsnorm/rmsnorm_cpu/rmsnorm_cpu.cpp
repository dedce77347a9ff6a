// RMSNorm on the CPU: rows in parallel, fp32 accumulation, any floating dtype.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>

#include "torch_binding.h"

namespace {

template <typename T>
void rms_norm_rows(T* out, const T* in, const T* weight, std::int64_t begin, std::int64_t end,
                   std::int64_t cols, float eps) {
  for (std::int64_t r = begin; r < end; ++r) {
    const T* x = in + r * cols;
    T* y = out + r * cols;
    float sum = 0.f;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = static_cast<float>(x[c]);
      sum += v * v;
    }
    const float scale = 1.f / std::sqrt(sum / static_cast<float>(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c)
      y[c] = static_cast<T>(static_cast<float>(x[c]) * scale * static_cast<float>(weight[c]));
  }
}

}  // namespace

torch::Tensor rms_norm_cpu(const torch::Tensor& input, const torch::Tensor& weight, double eps) {
  TORCH_CHECK(input.device().is_cpu() && weight.device().is_cpu(),
              "rms_norm: input and weight must be CPU tensors");
  TORCH_CHECK(input.dim() >= 1, "rms_norm: input needs at least one dimension");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == input.size(-1),
              "rms_norm: weight must have shape [", input.size(-1), "], got ", weight.sizes());
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "rms_norm: weight dtype ",
              weight.scalar_type(), " differs from input dtype ", input.scalar_type());
  const torch::Tensor x = input.contiguous();
  const torch::Tensor w = weight.contiguous();
  torch::Tensor out = torch::empty_like(x);
  const std::int64_t cols = x.size(-1);
  const std::int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "rms_norm", [&] {
    const scalar_t* in = x.data_ptr<scalar_t>();
    const scalar_t* wp = w.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](std::int64_t begin, std::int64_t end) {
      rms_norm_rows<scalar_t>(o, in, wp, begin, end, cols, static_cast<float>(eps));
    });
  });
  return out;
}
