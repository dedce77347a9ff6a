#pragma once
#include <torch/torch.h>

torch::Tensor geglu_cuda(const torch::Tensor& input);
