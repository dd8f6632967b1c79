"""Parameter descriptions shared by the docstrings of :mod:`neurokit.models` (filled in by :data:`fill_doc`).

A docstring names an entry by a line ``%(name)s`` in its ``Parameters`` section
(:func:`neurokit._utils.docs.make_fill_doc`), so a parameter that recurs across the models' functions
(``model_name``, ``map_location``, ``sample_shape``…) is described once, here. The kernels' entries
(:mod:`neurokit.kernels.docs`) are included.
"""

from __future__ import annotations

from neurokit._utils.docs import make_fill_doc
from neurokit.kernels.docs import docdict as kernels_docdict

#: entry name → numpydoc parameter text
docdict: dict[str, str] = dict(kernels_docdict)

docdict["model_name"] = """
name : str
    A model family (:data:`~neurokit.models.registry.MODELS`, :func:`~neurokit.models.registry.list_models`):
    ``"cbramod"``, ``"sit"``, ``"clip"`` or ``"eegnet"``.
"""

docdict["map_location"] = """
map_location : str or torch.device
    Device the weights are read onto and the module is placed on (default ``"cpu"``).
"""

docdict["allow_partial"] = """
allow_partial : bool
    Accept weights that cover only part of the module (the rest keeps its initial values); tensors of
    another shape are refused all the same.
"""

docdict["hub_revision"] = """
revision : str, optional
    Hub branch, tag or commit hash to pin (overrides a ``@REVISION`` in the name).
"""

docdict["hub_sha256"] = """
sha256 : str, optional
    Expected SHA-256 (hex) of the weights file; another file is refused (Hub files stored through Git LFS
    are always checked against their object id).
"""

docdict["hub_cache"] = """
cache_dir : str or Path, optional
    Hub cache folder (default :func:`~neurokit.models.hub.hub_cache_dir`: ``$HF_HUB_CACHE``…).
"""

docdict["hub_offline"] = """
offline : bool, optional
    Read the Hub cache only (default :func:`~neurokit.models.hub.offline_mode`: ``HF_HUB_OFFLINE`` or
    ``NEUROKIT_OFFLINE`` set).
"""

docdict["hub_options"] = "\n".join(
    docdict[k].strip("\n") for k in ("hub_revision", "hub_sha256", "hub_cache", "hub_offline")
)

docdict["store_attrs"] = """
store_attrs : dict
    The store's attributes (``PatchStore.attrs``): ``modality`` (``"eeg"``, ``"surface"``), ``ch_names``,
    ``sfreq`` (Hz), ``units``, ``card``, ``recipe``…
"""

docdict["sample_shape"] = """
sample_shape : tuple of int
    One sample's shape in the store: ``(C, N, P)`` for EEG (channels, patches, samples per patch, e.g.
    ``(19, 30, 200)``: 200 samples at 200 Hz, units of 100 µV), ``(T, N, V)`` for a surface store (frames,
    icosahedral patches, vertices per patch, e.g. ``(3, 320, 153)``).
"""

docdict["create_kwargs"] = """
kwargs : dict
    The family's options, as :func:`~neurokit.models.registry.create_model` takes them
    (:attr:`ModelSpec.options <neurokit.models.registry.ModelSpec>`).
"""

docdict["model_config"] = """
model_config : dict
    The configuration a checkpoint records (``model.config.to_dict()``).
"""

docdict["checkpoint_path"] = """
path : str or Path
    A checkpoint file written by :func:`~neurokit.models.checkpoint.save_checkpoint` (e.g. ``best.pt``).
"""

docdict["device"] = """
device : str or torch.device
    Where the model is placed (default ``"cpu"``).
"""

docdict["eeg_input"] = """
x : Tensor, shape ``(B, C, N, 200)``
    EEG windows: batch, channels, one-second patches of 200 samples at 200 Hz, in units of 100 µV
    (µV / 100).
"""

docdict["surface_input"] = """
x : Tensor, shape ``(B, C, N, V)``
    Surface data: batch, frames (or channels), icosahedral patches, ico6 vertices per patch (z-scored
    values).
"""

docdict["sit_presets"] = """
name : str
    Size preset: ``"sit_tiny"`` (192 wide, 3 heads), ``"sit_small"`` (384, 6) or ``"sit_base"`` (768, 12),
    all 12 layers deep; ``"tiny"``, ``"small"``, ``"base"`` are accepted too.
"""

#: the decorator that fills ``%(name)s`` lines from :data:`docdict`
fill_doc = make_fill_doc(docdict)
