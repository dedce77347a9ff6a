#include "torch_binding.h"

#include <torch/library.h>

#include "registration.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("rms_norm(Tensor input, Tensor weight, float eps) -> Tensor");
#if defined(CUDA_KERNEL) || defined(ROCM_KERNEL)
  ops.impl("rms_norm", torch::kCUDA, &rms_norm_cuda);
#elif defined(CPU_KERNEL)
  ops.impl("rms_norm", torch::kCPU, &rms_norm_cpu);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
