"""Loading pretrained weights into a model, strictly by default, with a report of what was loaded.

Follows timm's checkpoint loading: the usual wrappers are remapped (a ``state_dict`` or ``model`` entry
inside the file; ``module.`` from DataParallel/DDP, ``backbone.`` and ``model.`` key prefixes) and the
missing and unexpected tensor names are reported, never hidden. A file that does not cover the whole
model is refused unless ``allow_partial=True``; a tensor of another shape is always refused.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import torch
import torch.nn as nn

from neurokit._utils.errors import WeightsError
from neurokit.models.serialization import safe_load

#: key prefixes added by wrappers (DataParallel/DDP, fine-tuning models, training frameworks)
WRAPPER_PREFIXES = ("module.", "backbone.", "model.")
#: entries of a checkpoint dict that hold the state_dict
STATE_DICT_KEYS = ("state_dict", "model", "model_state_dict", "module")


@dataclass
class WeightReport:
    """What :func:`load_weights` loaded.

    Attributes
    ----------
    source : str
        Where the weights came from (path, or ``"<state dict>"``).
    loaded, total : int
        Tensors of the model filled from the file, and tensors the model has.
    missing : list of str
        Model tensors the file does not hold (left at their initial values).
    unexpected : list of str
        File tensors the model has no place for (ignored).
    remapped : dict
        Prefix stripped → number of keys it was stripped from.
    what : str
        The model part, for messages (``"backbone"``).

    Examples
    --------
    >>> WeightReport("w.pt", loaded=2, total=2).line()
    'loaded 2/2 backbone tensors from w.pt'
    """

    source: str
    loaded: int
    total: int
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    remapped: dict[str, int] = field(default_factory=dict)
    what: str = "backbone"

    @property
    def complete(self) -> bool:
        return self.loaded == self.total and not self.unexpected

    def line(self) -> str:
        """One line for logs and the CLI, e.g. ``loaded 211/211 backbone tensors from X``."""
        s = f"loaded {self.loaded}/{self.total} {self.what} tensors from {self.source}"
        extra = []
        if self.missing:
            extra.append(f"{len(self.missing)} missing (kept at initial values: {', '.join(self.missing[:3])}…)")
        if self.unexpected:
            extra.append(f"{len(self.unexpected)} unexpected ignored ({', '.join(self.unexpected[:3])}…)")
        if self.remapped:
            extra.append("stripped " + ", ".join(f"{p!r} from {n}" for p, n in self.remapped.items()))
        return s + (f" ({'; '.join(extra)})" if extra else "")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "complete": self.complete}


def resolve_weights_source(spec: str | Path) -> Path:
    """The local file a weights source names. Today: a path (``~`` expanded).

    Parameters
    ----------
    spec : str or Path
        The weights file.

    Returns
    -------
    Path

    Raises
    ------
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> resolve_weights_source("no/such.pt")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no/such.pt: no such weights file
    """
    path = Path(spec).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such weights file")
    return path


def read_state_dict(source: str | Path | Mapping[str, Any]) -> tuple[dict[str, torch.Tensor], str]:
    """``(state_dict, source name)`` from a path (:func:`resolve_weights_source`) or a mapping.

    A neurokit checkpoint, a bare state dict, or a dict holding one under ``state_dict``/``model``/…
    (nested wrappers are unwrapped too).

    Parameters
    ----------
    source : str, Path or mapping
        A weights file (read with ``torch.load(weights_only=True)``) or its content.

    Returns
    -------
    state_dict : dict
        Tensor name → tensor.
    name : str
        The path, or ``"<state dict>"``.

    Raises
    ------
    WeightsError
        The file holds no state dict, or would run code on loading.
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> read_state_dict({"model": {"w": torch.ones(1)}})[0]
    {'w': tensor([1.])}
    """
    if isinstance(source, Mapping):
        obj, name = source, "<state dict>"
    elif not isinstance(source, (str, Path)):  # a file's content that is no mapping (a list, a lone tensor)
        raise WeightsError(f"holds a {type(source).__name__}, not a mapping of tensor names to tensors")
    else:
        path = resolve_weights_source(source)
        name = str(path)
        obj = safe_load(path)  # weights_only=True: a file that would run code is refused (WeightsError)
    for _ in range(4):  # {"state_dict": {"model": {...}}} and the like
        if not isinstance(obj, Mapping):
            break
        if obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            return {str(k): v for k, v in obj.items()}, name
        inner = next((obj[k] for k in STATE_DICT_KEYS if isinstance(obj.get(k), Mapping)), None)
        if inner is None:
            break
        obj = inner
    raise WeightsError(
        f"{name}: holds no state dict (a mapping of tensor names to tensors, possibly under "
        f"one of the keys {list(STATE_DICT_KEYS)})"
    )


def remap_keys(sd: Mapping[str, torch.Tensor], model_keys) -> tuple[dict[str, torch.Tensor], dict[str, int]]:
    """Strip wrapper prefixes (:data:`WRAPPER_PREFIXES`, repeatedly: ``module.backbone.``) from keys the
    model does not know, when the stripped name is one it knows.

    Parameters
    ----------
    sd : mapping
        Tensor name → tensor, as read from the file.
    model_keys : iterable of str
        The model's tensor names.

    Returns
    -------
    state_dict : dict
        ``sd`` with the names remapped (the first of two names that map to one is kept).
    stripped : dict
        Prefix stripped → number of keys it was stripped from.

    Examples
    --------
    >>> remap_keys({"module.backbone.w": 1}, ["w"])
    ({'w': 1}, {'module.backbone.': 1})
    """
    want = set(model_keys)
    out: dict[str, torch.Tensor] = {}
    stripped: dict[str, int] = {}
    for k, v in sd.items():
        name = k
        cut: list[str] = []  # the prefixes stripped
        while name not in want:
            p = next((p for p in WRAPPER_PREFIXES if name.startswith(p)), None)
            if p is None:
                break
            name, cut = name[len(p) :], cut + [p]
        if name not in want:
            name, cut = k, []
        if cut:
            p = "".join(cut)
            stripped[p] = stripped.get(p, 0) + 1
        out.setdefault(name, v)
    return out, stripped


def load_weights(
    model: nn.Module,
    source: str | Path | Mapping[str, Any],
    *,
    allow_partial: bool = False,
    what: str = "backbone",
    name: str | None = None,
    derived: tuple[str, ...] | list[str] = (),
) -> WeightReport:
    """Load ``source`` into ``model`` (in place) and report the coverage.

    Parameters
    ----------
    model : nn.Module
    source : path or mapping
        Weights file (neurokit checkpoint, CBraMod's ``pretrained_weights.pth``, any file holding a state
        dict) or a state dict.
    allow_partial : bool
        Load what matches when the file covers only part of the model (missing tensors keep their initial
        values) or holds tensors the model has no place for. Default: refuse.
    what : str
        Name of the model part, for messages ("backbone").
    name : str, optional
        Name of the source in messages (default: the path, or ``"<state dict>"``).
    derived : sequence of str
        Model tensors computed from the data rather than learned (e.g. EEGPT's ``chans_id``, the channel ids of
        the store's channels): kept as they are, never loaded, and not counted.

    Returns
    -------
    WeightReport

    Raises
    ------
    WeightsError
        A tensor's shape differs from the model's (always; names the tensor); no tensor matches (always);
        the file covers less than the whole model or holds unexpected tensors (unless ``allow_partial``); after
        loading, a tensor of the model does not hold the file's values (a load that left weights at their initial
        values, as braindecode's ``BENDR.from_pretrained`` loading 0 of 99 weights did; always, naming them).
    FileNotFoundError
        No such file.
    """
    sd, src = read_state_dict(source)
    name = name or src
    own = {k: v for k, v in model.state_dict().items() if k not in set(derived)}
    sd, stripped = remap_keys(sd, own)
    sd = {k: v for k, v in sd.items() if k not in set(derived)}
    bad = [
        f"{k}: file {tuple(v.shape)}, model {tuple(own[k].shape)}"
        for k, v in sd.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    ]
    if bad:
        raise WeightsError(
            f"{name}: tensor shapes differ from the {what}'s: {'; '.join(bad[:5])}"
            f"{f' (and {len(bad) - 5} more)' if len(bad) > 5 else ''}. "
            "The file is for another configuration (layers, channels, sizes) of the model"
        )
    matched = [k for k in own if k in sd]
    report = WeightReport(
        source=name,
        loaded=len(matched),
        total=len(own),
        missing=[k for k in own if k not in sd],
        unexpected=[k for k in sd if k not in own],
        remapped=stripped,
        what=what,
    )
    if not matched:
        raise WeightsError(
            f"{name}: none of its {len(sd)} tensors belongs to the {what} (loaded 0/{len(own)}; "
            f"file keys e.g. {list(sd)[:3]}, {what} keys e.g. {list(own)[:3]}): weights of another model"
        )
    if not report.complete and not allow_partial:
        raise WeightsError(
            f"{name}: covers {report.loaded}/{report.total} {what} tensors "
            f"(missing {report.missing[:4]}{'…' if len(report.missing) > 4 else ''}, "
            f"unexpected {report.unexpected[:4]}{'…' if len(report.unexpected) > 4 else ''}); refusing a partial "
            "load. Pass allow_partial=True to load the tensors that match"
        )
    model.load_state_dict({k: sd[k] for k in matched}, strict=False)
    untouched = unloaded_tensors(model, {k: sd[k] for k in matched})
    if untouched:
        raise WeightsError(
            f"{name}: after loading, {len(untouched)} of the {report.loaded} {what} tensors matched by name do not "
            f"hold the file's values (left at their initial values: {', '.join(untouched[:5])}"
            f"{'…' if len(untouched) > 5 else ''}); the model's loading skips them"
        )
    return report


def unloaded_tensors(model: nn.Module, sd: Mapping[str, torch.Tensor]) -> list[str]:
    """Names of ``sd``'s tensors that ``model`` does not hold after loading (values compared in the model's dtype).

    Parameters
    ----------
    model : nn.Module
        The model just loaded.
    sd : mapping
        The tensors it was given (names of the model's state dict).

    Returns
    -------
    list of str
        The names whose values differ from the file's (or that the model no longer has).

    Examples
    --------
    >>> lin = nn.Linear(2, 1)
    >>> unloaded_tensors(lin, {"weight": torch.zeros(1, 2)})
    ['weight']
    >>> _ = lin.load_state_dict({"weight": torch.zeros(1, 2)}, strict=False)
    >>> unloaded_tensors(lin, {"weight": torch.zeros(1, 2)})
    []
    """
    now = model.state_dict()
    out = []
    for k, v in sd.items():
        have = now.get(k)
        if have is None or not torch.equal(have.detach().cpu(), v.detach().cpu().to(have.dtype)):
            out.append(k)
    return out
