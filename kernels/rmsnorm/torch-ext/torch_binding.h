#pragma once
#include <torch/torch.h>

torch::Tensor rms_norm_cuda(const torch::Tensor& input, const torch::Tensor& weight, double eps);
torch::Tensor rms_norm_cpu(const torch::Tensor& input, const torch::Tensor& weight, double eps);
