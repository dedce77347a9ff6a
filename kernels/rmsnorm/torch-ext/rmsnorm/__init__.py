"""RMSNorm over the last dimension: input * rsqrt(mean(input^2, -1) + eps) * weight.

Computed in fp32 and returned in the input's dtype (float32, float16, bfloat16).
"""
import torch

from ._ops import ops


def rms_norm(input: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return ops.rms_norm(input, weight, eps)


__all__ = ["rms_norm"]
