"""Reading pretrained weights files safely, for :func:`neurokit.models.registry.from_pretrained` and the model
classes' ``from_pretrained`` classmethods.

This module imports no model class, so that the model modules (``sit``, ``vsmae``, ``clip``, ``cbramod``) can
use it inside their classmethods while the registry, which imports every model class, uses it too: no
import cycle.

Every file is read with ``torch.load(weights_only=True)``: tensors, numbers, strings and containers, plus a
short list of harmless types that neurokit's own checkpoints hold (NumPy scalars and arrays in histories and
reports, ``pathlib`` paths in configurations; :data:`SAFE_GLOBALS`). A file that would import and call
anything else on loading (a pickled object of a custom class, which may run arbitrary code) is refused with
a :class:`PretrainedError` naming what it would import.

Three kinds of file are understood (:func:`read_pretrained`):

- a neurokit **pretraining checkpoint** (``kind="pretrain"``): the whole module of a model family
  (``model``: ``"cbramod"``, ``"sit"``, ``"clip"``) with its ``model_config``;
- a neurokit **fine-tuning checkpoint** (``kind="finetune"``, or the multitask ``"m4oe"``): a backbone plus a
  head; its ``backbone.*`` tensors are the fine-tuned backbone (:meth:`PretrainedFile.backbone_state`);
- a **bare state dict** (e.g. CBraMod's released ``pretrained_weights.pth``), which records no family and
  no configuration.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

import torch
import torch.nn as nn

from neurokit._utils.errors import ConfigError, WeightsError
from neurokit.models import serialization
from neurokit.models.checkpoint import FORMAT, check_format
from neurokit.models.docs import fill_doc
from neurokit.models.hub import HubError, fetch_weights
from neurokit.models.serialization import SAFE_GLOBALS  # noqa: F401  (documented here too)
from neurokit.models.weights import WeightReport, load_weights, read_state_dict

M = TypeVar("M", bound=nn.Module)

#: the model families a neurokit checkpoint may record (``"model"``), with their printed names
FAMILY_TITLES: dict[str, str] = {
    "cbramod": "CBraMod",
    "sit": "SiT",
    "clip": "CLIP (SiT)",
    "eegnet": "EEGNet",
    **{"labram": "LaBraM", "eegpt": "EEGPT", "reve": "REVE", "biot": "BIOT", "luna": "LUNA", "codebrain": "CodeBrain"},
}

#: checkpoint kinds whose state dict is the family's whole module; any other kind holds ``backbone.*`` + a head
WHOLE_MODULE_KINDS = ("pretrain", "state_dict")


class PretrainedError(WeightsError, HubError):
    """A pretrained weights file cannot be used: it would run code on loading, is of another model family,
    or does not fit the model.

    A :class:`~neurokit._utils.errors.WeightsError` and, for the callers of
    :meth:`CBraMod.from_pretrained <neurokit.models.cbramod.CBraMod.from_pretrained>` that catch it, a
    :class:`~neurokit.models.hub.HubError`.

    Parameters
    ----------
    message : str
        What is wrong with the file, and what to do.

    Examples
    --------
    >>> from neurokit.models.hub import HubError
    >>> isinstance(PretrainedError("x"), HubError)
    True
    """


def safe_load(path: str | Path, map_location: Any = "cpu") -> Any:
    """:func:`neurokit.models.serialization.safe_load` raising :class:`PretrainedError`.

    Parameters
    ----------
    path : str or Path
        A PyTorch or safetensors file.
    map_location : str, torch.device or callable
        Where the tensors are read to.

    Returns
    -------
    object
        The file's content (tensors, numbers, strings and containers).

    Raises
    ------
    PretrainedError
        A file that would run code on loading, or that is unreadable.

    Examples
    --------
    >>> import torch, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); torch.save({"w": torch.ones(2)}, p)
    >>> safe_load(p)["w"].tolist()
    [1.0, 1.0]
    """
    return serialization.safe_load(path, map_location, error=PretrainedError)


@dataclass
class PretrainedFile:
    """What :func:`read_pretrained` found in a weights file.

    Attributes
    ----------
    source : str
        The name the file was given by (path or ``hub:…``), for messages.
    family : str or None
        Model family the file records (``"cbramod"``, ``"sit"``, ``"clip"``); ``None`` for a bare state dict.
    kind : str
        ``"pretrain"``, ``"finetune"`` (or another kind holding a backbone and a head, e.g. ``"m4oe"``) or
        ``"state_dict"`` (a bare state dict).
    model_config : dict
        The family's configuration (``model.config.to_dict()``); empty for a bare state dict.
    state_dict : dict
        Tensor name → tensor, as stored.
    info : dict
        Provenance from :func:`~neurokit.models.hub.fetch_weights`: ``name``, ``sha256`` and, for Hub weights,
        ``repo_id``, ``revision``, ``commit``.
    checkpoint : dict
        The checkpoint's other entries (recipe, store attributes, head…), without the state dict.
    """

    source: str
    family: str | None
    kind: str
    model_config: dict
    state_dict: dict
    info: dict = field(default_factory=dict)
    checkpoint: dict = field(default_factory=dict)

    @property
    def whole_module(self) -> bool:
        """Whether the state dict is the family's whole module (pretraining checkpoint or bare state dict),
        not a fine-tuned backbone with a head."""
        return self.kind in WHOLE_MODULE_KINDS

    @property
    def title(self) -> str:
        """The recorded family as printed (``"CBraMod"``…), or ``"bare state dict"``."""
        return FAMILY_TITLES.get(self.family or "", self.family or "bare state dict")

    def backbone_state(self) -> dict:
        """The tensors of the backbone: the ``backbone.*`` entries of a fine-tuning checkpoint (prefix
        removed), or the whole state dict otherwise."""
        if self.whole_module:
            return dict(self.state_dict)
        return sub_state(self.state_dict, "backbone.")


def sub_state(sd: Mapping[str, torch.Tensor], prefix: str) -> dict:
    """The entries of ``sd`` whose names start with ``prefix``, with the prefix removed.

    Parameters
    ----------
    sd : mapping
        Tensor name → tensor.
    prefix : str
        E.g. ``"encoder."`` or ``"backbone."``.

    Returns
    -------
    dict

    Examples
    --------
    >>> import torch
    >>> sorted(sub_state({"encoder.w": torch.ones(1), "head.b": torch.ones(1)}, "encoder."))
    ['w']
    """
    return {k[len(prefix) :]: v for k, v in sd.items() if k.startswith(prefix)}


@fill_doc
def read_pretrained(
    source: str | Path | Mapping[str, Any],
    *,
    map_location: Any = "cpu",
    revision: str | None = None,
    sha256: str | None = None,
    cache_dir: str | Path | None = None,
    offline: bool | None = None,
) -> PretrainedFile:
    """Read a pretraining checkpoint, a fine-tuning checkpoint or a bare state dict, safely.

    Parameters
    ----------
    source : str, Path or mapping
        A local file, ``hub:ORG/NAME[/FILE][@REVISION]`` (or ``ORG/NAME``; :func:`~neurokit.models.hub.fetch_weights`),
        or a checkpoint dict / state dict already in memory.
    map_location : str, torch.device or callable
        Where the tensors are read to.
    %(hub_options)s

    Returns
    -------
    PretrainedFile

    Raises
    ------
    PretrainedError
        The file would run code on loading, is unreadable, or holds no state dict.
    FileNotFoundError, neurokit.models.hub.HubError
        No such file; Hub name not resolvable.

    Examples
    --------
    >>> import torch
    >>> pf = read_pretrained({"w": torch.zeros(1)})
    >>> pf.family, pf.kind
    (None, 'state_dict')
    """
    if isinstance(source, Mapping):
        obj, name, info = source, "<state dict>", {"name": "<state dict>"}
    else:
        path, info = fetch_weights(str(source), revision=revision, sha256=sha256, cache_dir=cache_dir, offline=offline)
        obj, name = safe_load(path, map_location), str(source)
    try:
        check_format(dict(obj) if isinstance(obj, Mapping) else obj, name)  # another format version: one line
    except WeightsError as exc:
        raise PretrainedError(str(exc)) from None
    if isinstance(obj, Mapping) and obj.get("format") == FORMAT:
        sd = obj.get("state_dict")
        if not isinstance(sd, Mapping):
            raise PretrainedError(f"{name}: a neurokit checkpoint without a state_dict")
        kind = str(obj.get("kind") or "pretrain")
        family = obj.get("model")
        rest = {k: v for k, v in obj.items() if k != "state_dict"}
        return PretrainedFile(
            name, str(family) if family else None, kind, dict(obj.get("model_config") or {}), dict(sd), info, rest
        )
    try:
        sd, _ = read_state_dict(obj)
    except WeightsError as exc:
        raise PretrainedError(f"{name}: neither a neurokit checkpoint nor a state dict ({exc})") from None
    return PretrainedFile(name, None, "state_dict", {}, sd, info, {})


def expect_family(pf: PretrainedFile, accepted: Sequence[str], who: str) -> str:
    """The family of ``pf`` when it is one of ``accepted`` (a bare state dict counts as ``accepted[0]``).

    Parameters
    ----------
    pf : PretrainedFile
    accepted : sequence of str
        Families the caller can build.
    who : str
        The caller, for the message (``"SiT.from_pretrained"``).

    Returns
    -------
    str
        The family.

    Raises
    ------
    PretrainedError
        The file records another family; the one-line message names both.

    Examples
    --------
    >>> import torch
    >>> expect_family(read_pretrained({"w": torch.zeros(1)}), ["sit", "clip"], "SiT.from_pretrained")
    'sit'
    """
    if pf.family is None:
        return accepted[0]
    if pf.family not in accepted:
        want = " or ".join(f"{FAMILY_TITLES.get(a, a)} ({a!r})" for a in accepted)
        raise PretrainedError(
            f"{pf.source}: is a {pf.title} checkpoint (model {pf.family!r}); {who} reads {want} "
            f"checkpoints: load it with neurokit.from_pretrained(...) or the {pf.title} class"
        )
    return pf.family


def load_into(
    module: nn.Module, state: Mapping[str, torch.Tensor], *, allow_partial: bool = False, name: str, what: str = "model"
) -> WeightReport:
    """Load ``state`` into ``module`` through :func:`~neurokit.models.weights.load_weights` (strict unless
    ``allow_partial``; shapes always checked), raising :class:`PretrainedError` on a mismatch.

    Parameters
    ----------
    module : nn.Module
    state : mapping
        Tensor name → tensor.
    allow_partial : bool
        Accept a state that covers only part of the module.
    name : str
        The source, for messages.
    what : str
        The module, for messages (``"model"``, ``"SiT encoder"``).

    Returns
    -------
    WeightReport

    Raises
    ------
    PretrainedError
        Missing or unexpected tensors (without ``allow_partial``), or tensors of another shape.

    Examples
    --------
    >>> import torch.nn as nn
    >>> lin = nn.Linear(2, 2)
    >>> load_into(lin, nn.Linear(2, 2).state_dict(), name="demo").complete
    True
    """
    try:
        return load_weights(module, dict(state), allow_partial=allow_partial, what=what, name=name)
    except PretrainedError:
        raise
    except WeightsError as exc:
        raise PretrainedError(str(exc)) from None


def cbramod_layers(sd: Mapping[str, Any]) -> int | None:
    """Layer count of a CBraMod state dict (``encoder.layers.{i}.…``; wrapper prefixes allowed).

    Parameters
    ----------
    sd : mapping
        Tensor name → tensor (only the names are read).

    Returns
    -------
    int or None
        One more than the largest layer index; ``None`` when no name is a CBraMod layer's.

    Examples
    --------
    >>> cbramod_layers({"encoder.layers.0.norm1.weight": 0, "module.encoder.layers.3.linear1.bias": 0})
    4
    """
    idx = [int(m.group(1)) for k in sd for m in [re.search(r"encoder\.layers\.(\d+)\.", k)] if m]
    return max(idx) + 1 if idx else None


def unknown_options(given: Mapping[str, Any], allowed: Sequence[str], what: str) -> None:
    """Refuse options outside those a model takes.

    Parameters
    ----------
    given : mapping
        The options passed.
    allowed : sequence of str
        The options the model takes.
    what : str
        The model, for the message.

    Raises
    ------
    ConfigError
        ``given`` holds keys outside ``allowed``; the message lists the allowed ones.

    Examples
    --------
    >>> unknown_options({"n_layers": 2}, ["n_layers"], "CBraMod")
    >>> unknown_options({"depth": 2}, ["n_layers"], "CBraMod")
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.ConfigError: unknown CBraMod option(s) ['depth']; allowed: n_layers
    """
    bad = sorted(set(given) - set(allowed))
    if bad:
        raise ConfigError(f"unknown {what} option(s) {bad}; allowed: {', '.join(sorted(allowed))}")


def with_info(module: M, pf: PretrainedFile, report: WeightReport, family: str) -> M:
    """Attach ``pretrained_info`` (provenance, coverage, family, kind) to ``module`` and return it.

    Parameters
    ----------
    module : nn.Module
    pf : PretrainedFile
        Where the weights came from.
    report : WeightReport
        What :func:`load_into` loaded.
    family : str
        The model family.

    Returns
    -------
    nn.Module
        ``module``, with ``pretrained_info``.

    Examples
    --------
    >>> import torch.nn as nn
    >>> lin = nn.Linear(1, 1)
    >>> pf = read_pretrained(nn.Linear(1, 1).state_dict())
    >>> with_info(lin, pf, load_into(lin, pf.state_dict, name="demo"), "demo").pretrained_info["loaded"]
    2
    """
    # torch types Module.__setattr__ for tensors and modules only; a plain attribute is fine at run time
    module.pretrained_info = {**pf.info, **report.to_dict(), "model": family, "kind": pf.kind}  # type: ignore[assignment]
    return module


def place(module: M, map_location: Any) -> M:
    """``module`` moved to ``map_location`` when it names a device (a string or ``torch.device``).

    Parameters
    ----------
    module : nn.Module
    map_location : str, torch.device or other
        ``torch.load``'s ``map_location``; a callable or a dict moves nothing.

    Returns
    -------
    nn.Module

    Examples
    --------
    >>> import torch.nn as nn
    >>> next(place(nn.Linear(1, 1), "cpu").parameters()).device.type
    'cpu'
    """
    if isinstance(map_location, (str, torch.device)):
        module = module.to(map_location)
    return module


def load_whole_module(
    build: Callable[[dict], M],
    source,
    *,
    family: str,
    caller: str,
    what: str,
    lacks: str,
    map_location: Any = "cpu",
    allow_partial: bool = False,
) -> M:
    """A family's whole pretraining module (vsMAE, CLIP) from ``source``: the shared body of their
    ``from_pretrained`` classmethods.

    Parameters
    ----------
    build : callable ``(model_config: dict) -> nn.Module``
        The module from the checkpoint's recorded configuration (the caller merges its overrides in).
    source : str or Path
        Pretraining checkpoint, bare state dict or Hub weights (:func:`read_pretrained`).
    family : str
        The one family the module belongs to (``"sit"``, ``"clip"``).
    caller, what, lacks : str
        For messages: the method's name, what is loaded (``"CLIP model"``) and what a fine-tuning checkpoint
        does not hold (``"the CLIP projection heads"``).
    map_location, allow_partial
        As :func:`read_pretrained` and :func:`load_into`.

    Raises
    ------
    PretrainedError
        Another family, a file that would run code, weights that do not fit.
    ConfigError
        A fine-tuning checkpoint (it holds a SiT encoder and a head only).
    """
    pf = read_pretrained(source, map_location=map_location)
    found = expect_family(pf, [family], caller)
    if not pf.whole_module:
        raise ConfigError(
            f"{pf.source}: is a fine-tuning checkpoint (kind {pf.kind!r}) holding a SiT encoder and a "
            f"head, not {lacks}; read its encoder with SiT.from_pretrained"
        )
    model = build(dict(pf.model_config))
    report = load_into(model, pf.state_dict, allow_partial=allow_partial, name=pf.source, what=what)
    return place(with_info(model, pf, report, found), map_location)
