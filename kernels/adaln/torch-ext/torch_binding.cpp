#include "torch_binding.h"

#include <torch/library.h>

#include "registration.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("adaln_modulate(Tensor input, Tensor scale, Tensor shift, float eps) -> Tensor");
#if defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("adaln_modulate", torch::kCUDA, &adaln_modulate_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
