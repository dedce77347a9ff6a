"""LayerNorm over the last dimension followed by GELU (tanh approximation), fused."""
import torch

from ._ops import ops


def layernorm_gelu(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   eps: float = 1e-5) -> torch.Tensor:
    return ops.layernorm_gelu(input, weight, bias, eps)


__all__ = ["layernorm_gelu"]
