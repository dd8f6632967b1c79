"""The EEG foundation models braindecode implements (LaBraM, EEGPT, REVE, BIOT, LUNA, CodeBrain) as neurokit
backbones, each fed as its paper feeds it.

:class:`FoundationBackbone` holds braindecode's own module (``.model``, its task layer replaced by an identity:
neurokit's :class:`~neurokit.models.heads.Head` classifies) behind an :class:`InputAdapter` that turns a store's
``(B, C, N, P)`` patches into the model's input by the store's :class:`~neurokit.models.contracts.Adaptation`
(channels selected, renamed or derived; resampled to the model's rate; cropped to whole patches; rescaled to its
pretraining units). ``forward_features`` returns braindecode's features with ``D`` last, which the ``avgpool`` head
reads. The models themselves are not re-written: their weights are braindecode's state dict (the *braindecode
layout*, the one ``braindecode/*`` Hub files hold), loaded strictly by :func:`load_foundation_weights`.

Examples
--------
>>> bb = make_foundation("biot", {"ch_names": ["C3", "C4"], "n_times": 400, "num_layers": 1, "embed_dim": 32})
>>> bb.forward_features(torch.zeros(2, 2, 2, 200)).shape
torch.Size([2, 1, 32])
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import torch
import torch.nn as nn

from neurokit._utils.errors import ConfigError
from neurokit.models.contracts import CONTRACTS, Adaptation, get_contract, montage_positions, plan_adaptation
from neurokit.models.weights import WeightReport, load_weights, read_state_dict

logger = logging.getLogger("neurokit")

#: the foundation models, by neurokit name (:data:`~neurokit.models.contracts.CONTRACTS`)
FOUNDATION_MODELS = tuple(CONTRACTS)
#: arguments neurokit sets on braindecode's classes itself (from the store and the contract)
SET_BY_NEUROKIT = ("n_outputs", "n_chans", "chs_info", "n_times", "input_window_seconds", "sfreq")
#: braindecode arguments neurokit fixes by default, as the paper feeds the model (a user's model_kwargs win)
PAPER_DEFAULTS: dict[str, dict[str, Any]] = {
    "eegpt": {"chan_proj_type": "none", "patch_stride": 64},  # named channels, non-overlapping 64-sample patches
}
#: braindecode's name of each model's layer count: ``n_layers`` (``neuro finetune --n-layers``) is translated to it
LAYER_ARG = {
    "labram": "num_layers",
    "eegpt": "depth",
    "reve": "depth",
    "biot": "num_layers",
    "luna": "depth",
    "codebrain": "num_res_layers",
}
#: file tensors that belong to a checkpoint's pretraining or task parts, set aside (counted, named) when loading
SET_ASIDE_PREFIXES: dict[str, tuple[str, ...]] = {
    "labram": ("final_layer.", "head."),
    "eegpt": ("final_layer.", "predictor.", "reconstructor.", "chan_proj."),
    "reve": ("final_layer.", "cls_query_token"),
    "biot": ("final_layer.", "classifier."),
    "luna": ("final_layer.", "decoder_head.", "channel_emb."),
    "codebrain": ("final_layer.",),
}
#: model tensors computed from the store's channels, never loaded
DERIVED: dict[str, tuple[str, ...]] = {"eegpt": ("chans_id",)}


@dataclass
class FoundationConfig:
    """A :class:`FoundationBackbone`'s configuration (recorded in checkpoints; :meth:`to_dict` rebuilds it).

    Attributes
    ----------
    model : str
        A key of :data:`~neurokit.models.contracts.CONTRACTS`.
    kwargs : dict
        Arguments of braindecode's class (sizes: ``num_layers``, ``embed_dim``…), besides those neurokit sets.
    adaptation : dict
        The store's :class:`~neurokit.models.contracts.Adaptation` (``to_dict()``).
    """

    model: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    adaptation: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))


class InputAdapter(nn.Module):
    """Applies an :class:`~neurokit.models.contracts.Adaptation` to a batch (no learned parameters, no state).

    ``(B, C, N, P)`` patches (or ``(B, C, T)``) in the store's units → ``(B, C', T')``: the model's channels
    (bipolar ones formed by a difference), resampled with ``torchaudio.functional.resample`` (windowed sinc), the
    last samples cropped to whole patches, scaled as the contract says.

    Parameters
    ----------
    adaptation : Adaptation

    Examples
    --------
    >>> from neurokit.models.contracts import plan_adaptation
    >>> ad = InputAdapter(plan_adaptation("luna", {"ch_names": ["C3", "CZ"]}, (2, 5, 200)))
    >>> ad(torch.randn(3, 2, 5, 200)).shape
    torch.Size([3, 2, 1280])
    """

    index: torch.Tensor
    minus: torch.Tensor
    has_minus: torch.Tensor

    def __init__(self, adaptation: Adaptation) -> None:
        super().__init__()
        self.adaptation = adaptation
        self.register_buffer("index", torch.tensor(adaptation.index, dtype=torch.long), persistent=False)
        minus = adaptation.minus or [-1] * len(adaptation.index)
        self.register_buffer("minus", torch.tensor([max(m, 0) for m in minus], dtype=torch.long), persistent=False)
        self.register_buffer("has_minus", torch.tensor([m >= 0 for m in minus]), persistent=False)
        self.bipolar = any(m >= 0 for m in minus)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.adaptation
        if x.dim() == 4:
            x = x.flatten(2)
        if x.dim() != 3 or x.shape[1] != len(a.store_channels) or x.shape[2] != a.store_samples:
            raise ConfigError(
                f"{a.model}: built for store windows of {len(a.store_channels)} channels × {a.store_samples} "
                f"samples; got {tuple(x.shape)}"
            )
        y = x.index_select(1, self.index)
        if self.bipolar:
            y = y - x.index_select(1, self.minus) * self.has_minus.to(y.dtype)[None, :, None]
        if a.resampled:
            import torchaudio.functional as AF

            src, dst = int(round(a.store_sfreq)), int(round(a.model_sfreq))
            y = AF.resample(y, src, dst)
        y = y[..., : a.model_samples]
        if a.scaling in ("100uV", "mV"):
            return y * a.unit_factor if a.unit_factor != 1.0 else y
        if a.scaling == "q95":
            return y / (torch.quantile(y.abs().float(), 0.95, dim=-1, keepdim=True).to(y.dtype) + 1e-8)
        z = (y - y.mean(dim=-1, keepdim=True)) / (y.std(dim=-1, keepdim=True) + 1e-6)
        return z.clamp(-15.0, 15.0) if a.scaling == "zscore-clip15" else z


@contextmanager
def _reve_position_bank() -> Iterator[None]:
    """REVE builds a position bank on construction (a file downloaded from the Hub); neurokit passes the positions
    to every forward, so when no bank is cached a small one written from the montage lets the module be built
    offline."""
    import mne

    configured = os.environ.get("REVE_POSITIONS_PATH") or mne.get_config("REVE_POSITIONS_PATH")
    default = Path(mne.get_config("MNE_DATA") or Path.home() / "mne_data")
    for d in [configured, str(default)]:
        if d and (Path(d) / "reve_positions.json").is_file():
            yield
            return
    tmp = Path(tempfile.gettempdir()) / "neurokit-reve-bank"
    tmp.mkdir(exist_ok=True)
    bank = tmp / "reve_positions.json"
    if not bank.is_file():
        bank.write_text(json.dumps({k: list(v) for k, v in montage_positions().items()}))
    old = os.environ.get("REVE_POSITIONS_PATH")
    os.environ["REVE_POSITIONS_PATH"] = str(tmp)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("REVE_POSITIONS_PATH", None)
        else:
            os.environ["REVE_POSITIONS_PATH"] = old


def braindecode_class(name: str) -> type[nn.Module]:
    """braindecode's class for foundation model ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`~neurokit.models.contracts.CONTRACTS`.

    Returns
    -------
    type

    Examples
    --------
    >>> braindecode_class("labram").__name__
    'Labram'
    """
    import braindecode.models as bdm

    return getattr(bdm, get_contract(name).braindecode)


def braindecode_options(name: str) -> tuple[str, ...]:
    """The arguments of braindecode's class a user may set (``model_kwargs``): all but :data:`SET_BY_NEUROKIT`.

    Parameters
    ----------
    name : str

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> "num_layers" in braindecode_options("labram")
    True
    """
    params = inspect.signature(braindecode_class(name).__init__).parameters
    return tuple(p for p in params if p != "self" and p not in SET_BY_NEUROKIT)


def new_braindecode_module(name: str, adaptation: Adaptation, kwargs: dict, n_outputs: int | None = None) -> nn.Module:
    """braindecode's module for ``name`` sized for an adapted store, as :class:`FoundationBackbone` builds it
    (``n_outputs=None``: its task layer is the identity), or with a task layer of ``n_outputs`` (to compare with).

    Parameters
    ----------
    name : str
    adaptation : Adaptation
    kwargs : dict
        Arguments of braindecode's class (:func:`braindecode_options`); ``n_layers`` names the layer count
        (:data:`LAYER_ARG`).
    n_outputs : int, optional

    Returns
    -------
    nn.Module

    Raises
    ------
    ConfigError
        An argument braindecode's class does not take, or one neurokit sets (:data:`SET_BY_NEUROKIT`).

    Examples
    --------
    >>> a = plan_adaptation("codebrain", {"ch_names": ["C3", "C4"]}, (2, 2, 200))
    >>> type(new_braindecode_module("codebrain", a, {"num_res_layers": 1}, n_outputs=3)).__name__
    'CodeBrain'
    """
    import warnings

    allowed = braindecode_options(name)
    kwargs = dict(kwargs)
    if "n_layers" in kwargs:  # neurokit's name of the layer count
        kwargs[LAYER_ARG[name]] = kwargs.pop("n_layers")
    bad = sorted(set(kwargs) - set(allowed))
    if bad:
        raise ConfigError(f"{get_contract(name).title}: unknown option(s) {bad}; allowed: {', '.join(allowed)}")
    kw = {**PAPER_DEFAULTS.get(name, {}), **kwargs}
    chs = [{"ch_name": n} for n in adaptation.model_channels]
    base: dict[str, Any] = {"n_chans": len(chs), "n_times": adaptation.model_samples, "sfreq": adaptation.model_sfreq}
    if name == "eegpt" and kw.get("chan_proj_type", "none") == "none":
        base["chs_info"] = chs
    if name == "labram":
        base["n_outputs"] = n_outputs or 0
    elif name == "eegpt" and n_outputs is None:
        base["n_outputs"], kw["return_encoder_output"] = 1, True
    else:
        base["n_outputs"] = n_outputs or 1
    if name == "biot":
        base.pop("sfreq")
        kw.setdefault("sfreq", int(adaptation.model_sfreq))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # braindecode's warnings about our sizes are said in the adaptation line
        if name == "reve":
            with _reve_position_bank():
                module = braindecode_class(name)(**base, **kw)
        else:
            module = braindecode_class(name)(**base, **kw)
    if n_outputs is None and name not in ("labram", "eegpt"):
        module.final_layer = nn.Identity()
    return module


class FoundationBackbone(nn.Module):
    """braindecode's module for one foundation model behind the store's :class:`InputAdapter`.

    Parameters
    ----------
    config : FoundationConfig

    Attributes
    ----------
    model : nn.Module
        braindecode's module (its task layer the identity); its ``state_dict()`` is the braindecode layout.
    adapter : InputAdapter
    adaptation : Adaptation

    Notes
    -----
    ``forward_features(x)``: ``(B, C, N, P)`` store patches → features with ``D`` last: LaBraM ``(B, 1 + C'·N',
    D)`` (class token first), EEGPT ``(B, N', embed_num, D)``, REVE and CodeBrain ``(B, C', N', D)``, BIOT ``(B, 1,
    D)``, LUNA ``(B, N', Q·D)``.
    """

    positions: torch.Tensor

    def __init__(self, config: FoundationConfig) -> None:
        super().__init__()
        self.config = config
        self.adaptation = Adaptation.from_dict(config.adaptation)
        self.name = config.model
        self.adapter = InputAdapter(self.adaptation)
        self.model = new_braindecode_module(self.name, self.adaptation, dict(config.kwargs))
        pos = self.adaptation.positions
        self.register_buffer(
            "positions", torch.tensor(pos if pos else [[0.0, 0.0, 0.0]], dtype=torch.float32), persistent=False
        )

    def model_input(self, x: torch.Tensor) -> torch.Tensor:
        """The adapted batch ``(B, C', T')`` braindecode's module receives."""
        return self.adapter(x)

    def braindecode_features(self, y: torch.Tensor) -> torch.Tensor:
        """braindecode's features of an adapted batch ``(B, C', T')`` (see the class notes for the shapes)."""
        m: nn.Module = self.model
        b = y.shape[0]
        if self.name == "labram":
            out = m(y, ch_names=self.adaptation.model_channels, return_features=True)
            return torch.cat([out["cls_token"][:, None], out["features"]], dim=1)
        if self.name == "eegpt":
            return m(y)  # return_encoder_output=True: (B, N', embed_num, D)
        if self.name == "reve":
            return m(y, pos=self.positions.expand(b, -1, -1), return_features=True)["features"]
        if self.name == "luna":
            return m(y, channel_locations=self.positions.expand(b, -1, -1))  # its task layer is the identity
        if self.name == "biot":
            return m(y, return_features=True)["features"][:, None]
        return m(y, return_features=True)["features"]  # codebrain

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Store patches ``(B, C, N, P)`` → braindecode's features, ``D`` last."""
        return self.braindecode_features(self.model_input(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)


def build_foundation(name: str, store_attrs: dict, sample_shape: tuple, kwargs: dict) -> FoundationBackbone:
    """:class:`FoundationBackbone` for an EEG store's ``(C, N, P)`` samples (the foundation families' ``build``).

    Parameters
    ----------
    name : str
        A key of :data:`~neurokit.models.contracts.CONTRACTS`.
    store_attrs : dict
        The store's attributes (``ch_names``, ``sfreq``, ``units``, ``modality``).
    sample_shape : tuple
        ``(C, N, P)``.
    kwargs : dict
        Arguments of braindecode's class (sizes), :func:`braindecode_options`.

    Returns
    -------
    FoundationBackbone

    Raises
    ------
    ConfigError
        Not an EEG store, channels the model cannot take (:func:`~neurokit.models.contracts.plan_adaptation`), an
        unknown option.

    Examples
    --------
    >>> bb = build_foundation("codebrain", {"ch_names": ["C3", "C4"]}, (2, 2, 200), {"num_res_layers": 1})
    >>> bb.adaptation.model_samples
    400
    """
    if (store_attrs.get("modality") or "eeg") != "eeg":
        raise ConfigError(f"{get_contract(name).title} is an EEG model; this store is {store_attrs.get('modality')!r}")
    adaptation = plan_adaptation(name, store_attrs, sample_shape)
    logger.info("%s", adaptation.line())
    return FoundationBackbone(FoundationConfig(name, dict(kwargs), adaptation.to_dict()))


def rebuild_foundation(cfg: dict) -> FoundationBackbone:
    """:class:`FoundationBackbone` from its recorded configuration (:meth:`FoundationConfig.to_dict`).

    Parameters
    ----------
    cfg : dict
        ``model``, ``kwargs``, ``adaptation``.

    Returns
    -------
    FoundationBackbone

    Raises
    ------
    ConfigError
        Keys other than those.

    Examples
    --------
    >>> bb = make_foundation("biot", {"ch_names": ["C3"], "n_times": 400, "num_layers": 1, "embed_dim": 32})
    >>> rebuild_foundation(bb.config.to_dict()).adaptation.model_channels
    ['C3']
    """
    bad = sorted(set(cfg) - {"model", "kwargs", "adaptation"})
    if bad:
        raise ConfigError(f"unknown foundation-model config key(s) {bad}; allowed: model, kwargs, adaptation")
    return FoundationBackbone(FoundationConfig(**cfg))


#: :func:`make_foundation`'s options that describe the data (the rest are braindecode's)
DATA_OPTIONS = ("ch_names", "n_chans", "n_times", "sfreq", "units")


def make_foundation(name: str, kwargs: dict) -> FoundationBackbone:
    """:class:`FoundationBackbone` from :func:`~neurokit.models.registry.create_model` options, no store needed.

    Parameters
    ----------
    name : str
    kwargs : dict
        The data (:data:`DATA_OPTIONS`): ``ch_names`` (or ``n_chans`` for models that take any channels),
        ``n_times`` (samples per window at ``sfreq``, default the contract's window), ``sfreq`` (Hz, default 200,
        the store's rate), ``units`` (default ``"100 uV"``); the rest are braindecode's arguments.

    Returns
    -------
    FoundationBackbone

    Raises
    ------
    ConfigError
        As :func:`build_foundation`.

    Examples
    --------
    >>> bb = make_foundation("eegpt", {"ch_names": ["C3", "CZ", "C4"], "depth": 1, "embed_dim": 32, "num_heads": 2})
    >>> bb.adaptation.model_samples, bb.adaptation.unit_factor  # 4 s at 256 Hz, 100 µV units → mV
    (1024, 0.1)
    """
    kw = dict(kwargs)
    data = {k: kw.pop(k) for k in DATA_OPTIONS if k in kw}
    c = get_contract(name)
    names = list(data.get("ch_names") or [])
    n_ch = len(names) or int(data.get("n_chans") or 19)
    sfreq = float(data.get("sfreq") or 200.0)
    n_times = int(data.get("n_times") or round((c.window_s or 4.0) * sfreq))
    attrs = {"modality": "eeg", "ch_names": names or None, "sfreq": sfreq, "units": data.get("units", "100 uV")}
    return build_foundation(name, attrs, (n_ch, 1, n_times), kw)


def _fit_temporal_embedding(backbone: "FoundationBackbone", sd: dict, name: str) -> dict[str, list[int]]:
    """LaBraM's ``temporal_embedding`` is sized by the window it was built for (one row per patch, plus the class
    token's). A file made for longer windows than the store's gives the module its first rows, as the authors'
    fine-tuning takes the first of its 16 time embeddings for a shorter window (``sd`` is changed in place); a file
    with fewer rows than the store's windows need is left to be refused as reshaped."""
    if backbone.name != "labram":
        return {}
    key = "temporal_embedding"
    have, got = getattr(backbone.model, key, None), sd.get(key)
    if not isinstance(have, torch.Tensor) or not isinstance(got, torch.Tensor) or got.ndim != have.ndim:
        return {}
    if got.shape[1] <= have.shape[1] or got.shape[0] != have.shape[0] or got.shape[2:] != have.shape[2:]:
        return {}
    sd[key] = got[:, : have.shape[1]].clone()
    logger.info(
        "%s: temporal_embedding holds %d positions; the store's windows take the first %d",
        name,
        got.shape[1],
        have.shape[1],
    )
    return {key: [int(got.shape[1]), int(have.shape[1])]}


def load_foundation_weights(
    backbone: FoundationBackbone,
    source: str | Path | Mapping[str, Any],
    *,
    allow_partial: bool = False,
    name: str | None = None,
) -> tuple[WeightReport, dict[str, Any]]:
    """Load weights in the braindecode layout (braindecode's ``state_dict()`` of the class, as the ``braindecode/*``
    Hub files hold it; a neurokit backbone's ``model.``-prefixed keys too) into ``backbone.model``, strictly.

    The file's task head and pretraining-only parts (:data:`SET_ASIDE_PREFIXES`, e.g. ``final_layer.*``, EEGPT's
    ``predictor.*``) are set aside and named; tensors derived from the store's channels (:data:`DERIVED`) are kept;
    the names braindecode's class maps for the authors' checkpoints (its ``mapping`` attribute, e.g. LUNA's) are
    renamed. Every other tensor must fit: :func:`~neurokit.models.weights.load_weights` refuses a missing,
    unexpected or reshaped tensor, and one the load leaves at its initial value, naming them.

    Parameters
    ----------
    backbone : FoundationBackbone
    source : path or mapping
        A weights file (``.pt``/``.pth``/``.safetensors``) or a state dict.
    allow_partial : bool
        Load what matches when tensors are missing or unexpected (never when reshaped or untouched).
    name : str, optional
        The source, for messages.

    Returns
    -------
    (WeightReport, dict)
        The coverage, and ``set_aside`` (names), ``renamed`` (file name → model name), ``derived`` (names kept).

    Raises
    ------
    neurokit._utils.errors.WeightsError
        See above.
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> bb = make_foundation("biot", {"ch_names": ["C3"], "n_times": 400, "num_layers": 1, "embed_dim": 32})
    >>> sd = {**bb.model.state_dict(), "final_layer.classification_head.bias": torch.zeros(2)}
    >>> report, extra = load_foundation_weights(bb, sd)
    >>> report.complete, extra["set_aside"]
    (True, ['final_layer.classification_head.bias'])
    """
    sd, src = read_state_dict(source)
    name = name or src
    mapping = dict(getattr(backbone.model, "mapping", None) or {})
    renamed = {k: mapping[k] for k in sd if k in mapping}
    sd = {mapping.get(k, k): v for k, v in sd.items()}
    if any(k.startswith("model.") for k in sd) and not any(k.startswith("model.") for k in backbone.model.state_dict()):
        sd = {k[len("model.") :] if k.startswith("model.") else k: v for k, v in sd.items()}
    prefixes = SET_ASIDE_PREFIXES.get(backbone.name, ())
    own = backbone.model.state_dict()
    aside = [k for k in sd if k not in own and k.startswith(prefixes)]
    sd = {k: v for k, v in sd.items() if k not in set(aside)}
    derived = DERIVED.get(backbone.name, ())
    title = get_contract(backbone.name).title
    sliced = _fit_temporal_embedding(backbone, sd, name)
    report = load_weights(
        backbone.model, sd, allow_partial=allow_partial, what=f"{title} model", name=name, derived=derived
    )
    extra = {"set_aside": aside, "renamed": renamed, "derived": list(derived), "sliced": sliced}
    if aside:
        logger.info("%s: set aside %d tensors of its task head / pretraining parts (%s…)", name, len(aside), aside[0])
    return report, extra
