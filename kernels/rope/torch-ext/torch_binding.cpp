#include "torch_binding.h"

#include <torch/library.h>

#include "registration.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("apply_rope(Tensor x, Tensor cos, Tensor sin) -> Tensor");
#if defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("apply_rope", torch::kCUDA, &apply_rope_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
