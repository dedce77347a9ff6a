#pragma once
#include <torch/torch.h>

torch::Tensor adaln_modulate_cuda(const torch::Tensor& input, const torch::Tensor& scale,
                                  const torch::Tensor& shift, double eps);
