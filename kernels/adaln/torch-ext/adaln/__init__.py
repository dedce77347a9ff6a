"""AdaLN modulation: layer_norm(input) * (1 + scale) + shift.

input is [batch, seq, hidden]; scale and shift are [batch, hidden], broadcast over the sequence;
the LayerNorm over the last dimension has no affine parameters.
"""
import torch

from ._ops import ops


def adaln_modulate(input: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor,
                   eps: float = 1e-6) -> torch.Tensor:
    return ops.adaln_modulate(input, scale, shift, eps)


__all__ = ["adaln_modulate"]
