#include "torch_binding.h"

#include <torch/library.h>

#include "registration.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("geglu(Tensor input) -> Tensor");
#if defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("geglu", torch::kCUDA, &geglu_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
