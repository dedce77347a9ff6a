"""The wrong kernels of scripts/gpu-check.sh: copies of a reference kernel project with one planted
fault each, which the kernel judge must fail on a GPU. Each edit must apply exactly once, so a change
to the reference kernel cannot silently leave a "wrong" kernel right (ctest gpu_check_faults).

    python3 scripts/gpu_check_faults.py kernels/rmsnorm OUT_DIR   # OUT_DIR/<fault>/ per fault
"""
import shutil, sys, pathlib
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
faults = {
    # warp 0 reads the per-warp sums before the other warps have written them
    "race": ("rmsnorm_cuda/vec.cuh",
             "  if (lane == 0) scratch[warp] = x;\n  __syncthreads();\n",
             "  if (lane == 0) scratch[warp] = x;\n"),
    # xor lane masks from 8: each warp sums two halves of 16 lanes, never the whole warp
    "shuffle-mask": ("rmsnorm_cuda/vec.cuh",
                     "for (int offset = 16; offset > 0; offset >>= 1)",
                     "for (int offset = 8; offset > 0; offset >>= 1)"),
    # the scalar (ragged) path never writes the row's last element: torch::empty_like memory
    "unwritten-tail": ("rmsnorm_cuda/rmsnorm.cu",
                       "    for (int c = threadIdx.x; c < cols; c += blockDim.x)\n      y[c] =",
                       "    for (int c = threadIdx.x; c < cols - 1; c += blockDim.x)\n      y[c] ="),
    # a right answer, but the vector path writes it over the input too
    "input-mutation": ("rmsnorm_cuda/rmsnorm.cu",
                       "      store(y + c, r);\n",
                       "      store(y + c, r);\n      store(const_cast<T*>(x) + c, r);\n"),
}
for name, (path, old, new) in faults.items():
    target = dst / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(src, target)
    text = (target / path).read_text()
    if text.count(old) != 1:
        sys.exit(f"{name}: the text to change occurs {text.count(old)} times in {path}")
    (target / path).write_text(text.replace(old, new))
