"""Attention kernels: fused Triton criss-cross attention with an exact PyTorch reference path."""

from neurokit.kernels.criss_cross import (
    criss_cross_attention,
    criss_cross_attention_reference,
)

__all__ = ["criss_cross_attention", "criss_cross_attention_reference"]
