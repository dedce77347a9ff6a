"""GEGLU: split the last dimension in halves a, b and return a * gelu_tanh(b)."""
import torch

from ._ops import ops


def geglu(input: torch.Tensor) -> torch.Tensor:
    return ops.geglu(input)


__all__ = ["geglu"]
