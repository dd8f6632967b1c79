"""neurokit: raw brain recordings (EEG, cortical-surface fMRI) to foundation-model results.

Top-level entry points (imported lazily so ``import neurokit`` stays fast):

- :func:`read_eeg` — any MNE-readable EEG file → ``mne.io.Raw`` with 10-05 channel names.
- :func:`read_surface` — CIFTI-2 / GIFTI / FreeSurfer surface data → :class:`SurfaceData`.
- :class:`EEGRecipe`, :func:`load_windows` — CBraMod preprocessing and ``(C, N, 200)`` patches.
- :class:`PatchStore`, :class:`PatchDataset` — HDF5 patch stores and the torch dataset over them.
- :func:`load_card` — data cards.
"""

from __future__ import annotations

import importlib

from neurokit._utils.version import VERSION as __version__  # noqa: F401  (the public version attribute)

_LAZY = {
    "read_eeg": "neurokit.io.eeg",
    "EEGRecipe": "neurokit.cards.recipes",
    "load_windows": "neurokit.preprocessing.eeg.windows",
    "PatchStore": "neurokit.store.patch_store",
    "PatchStoreWriter": "neurokit.store.patch_store",
    "PatchDataset": "neurokit.data.dataset",
    "load_card": "neurokit.cards",
    "list_cards": "neurokit.cards",
    "read_surface": "neurokit.io.surface",
    "create_model": "neurokit.models.registry",
    "from_pretrained": "neurokit.models.registry",
    "NeurokitError": "neurokit._utils.errors",
    "ConfigError": "neurokit._utils.errors",
    "DataFileError": "neurokit._utils.errors",
    "CardError": "neurokit._utils.errors",
    "StoreError": "neurokit._utils.errors",
    "WeightsError": "neurokit._utils.errors",
    "ChannelMismatchError": "neurokit._utils.errors",
    "SurfaceData": "neurokit.io.surface",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'neurokit' has no attribute {name!r}")


def __dir__():
    return sorted([n for n in globals() if n != "importlib"] + list(_LAZY))
