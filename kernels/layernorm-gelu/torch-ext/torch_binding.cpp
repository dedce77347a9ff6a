#include "torch_binding.h"

#include <torch/library.h>

#include "registration.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("layernorm_gelu(Tensor input, Tensor weight, Tensor bias, float eps) -> Tensor");
#if defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("layernorm_gelu", torch::kCUDA, &layernorm_gelu_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
