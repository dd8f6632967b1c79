"""Preprocessing recipes and the cut into patch tensors."""
