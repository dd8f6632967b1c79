"""Patch stores (HDF5) and the datasets that read them."""
from .dataset import PatchDataset
from .store import PatchStore, PatchStoreWriter, open_stores

__all__ = ["PatchDataset", "PatchStore", "PatchStoreWriter", "open_stores"]
