#pragma once
#include <torch/torch.h>

torch::Tensor layernorm_gelu_cuda(const torch::Tensor& input, const torch::Tensor& weight,
                                  const torch::Tensor& bias, double eps);
