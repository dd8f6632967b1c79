"""Data: the torch dataset over patch stores (:mod:`~neurokit.data.dataset`), splits, folds and leak checks
(:mod:`~neurokit.data.splits`), fMRI–stimulus pairs (:mod:`~neurokit.data.pairs`) and EEG augmentation
(:mod:`~neurokit.data.augment`). The store format itself is :mod:`neurokit.store.patch_store`."""

from neurokit.data.dataset import PatchDataset
from neurokit.store.shards import open_stores
from neurokit.store.patch_store import PatchStore, PatchStoreWriter

__all__ = ["PatchDataset", "PatchStore", "PatchStoreWriter", "open_stores"]
