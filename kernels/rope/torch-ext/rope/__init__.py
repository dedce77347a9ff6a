"""Rotary position embedding: x * cos + rotate_half(x) * sin.

x is [batch, seq, heads, head_dim]; cos and sin are [seq, head_dim];
rotate_half(x) = cat(-x2, x1) over the halves of the last dimension.
"""
import torch

from ._ops import ops


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return ops.apply_rope(x, cos, sin)


__all__ = ["apply_rope"]
