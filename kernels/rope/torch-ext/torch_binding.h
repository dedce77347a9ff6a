#pragma once
#include <torch/torch.h>

torch::Tensor apply_rope_cuda(const torch::Tensor& x, const torch::Tensor& cos,
                              const torch::Tensor& sin);
