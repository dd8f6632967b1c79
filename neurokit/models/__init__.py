"""Models: CBraMod (EEG), surface vision transformers (SiT, vsMAE), tri-modal CLIP, heads; the registry.

``create_model(name, **options)`` builds a family by name and ``from_pretrained(source)`` rebuilds one from
a checkpoint (:mod:`neurokit.models.registry`); both are imported lazily, so importing this package does not
import the registry's dependencies.
"""

from __future__ import annotations

import importlib

from neurokit.models.cbramod import CBraMod, CBraModConfig
from neurokit.models.sit import SiT, SiTConfig, create_sit, sit_config
from neurokit.models.vsmae import VSMAE, VSMAEConfig, create_vsmae

_LAZY = {
    "create_model": "neurokit.models.registry",
    "from_pretrained": "neurokit.models.registry",
    "list_models": "neurokit.models.registry",
    "get_model_spec": "neurokit.models.registry",
    "ModelSpec": "neurokit.models.registry",
    "MODELS": "neurokit.models.registry",
    "SurfaceCLIP": "neurokit.models.clip",
    "CLIPConfig": "neurokit.models.clip",
    "PretrainedError": "neurokit.models.pretrained",
}

__all__ = [
    "CBraMod",
    "CBraModConfig",
    "SiT",
    "SiTConfig",
    "create_sit",
    "sit_config",
    "VSMAE",
    "VSMAEConfig",
    "create_vsmae",
    *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'neurokit.models' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
