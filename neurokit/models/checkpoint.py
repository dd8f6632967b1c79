"""Checkpoints: model configuration and weights, optimiser, scheduler and RNG state, data card and
preprocessing recipe, in one ``torch.save`` file written atomically."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from neurokit.models.docs import fill_doc
from neurokit.models.serialization import safe_load

FORMAT = "neurokit-checkpoint/1"


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plus format tag) to ``path`` via a temporary file and an atomic rename.

    Parameters
    ----------
    path : path
        The checkpoint file (``last.pt``, ``best.pt``).
    payload : dict
        Tensors, numbers, strings, lists and dicts (what :func:`load_checkpoint` reads back safely).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    DiskFullError
        The disk (or quota) is full, checked before writing (the tensors' bytes) and while writing; the
        temporary file is removed and a checkpoint written before at ``path`` is left whole. PyTorch's own
        report of it (``enforce fail at inline_container.cc … unexpected pos``) names no cause: the file is
        written through a Python file object so that the ``ENOSPC`` reaches this function.

    Examples
    --------
    >>> import tempfile, os
    >>> p = save_checkpoint(os.path.join(tempfile.mkdtemp(), "last.pt"), {"step": 3})
    >>> load_checkpoint(p)["step"]
    3
    """
    from neurokit._utils.disk import check_free_space, is_disk_full
    from neurokit._utils.errors import DiskFullError

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    kept = f"the checkpoint written before at {path} is kept" if path.exists() else f"{path} was not written"
    try:
        check_free_space(path.parent, _tensor_bytes(payload), what=path)
        with open(tmp, "wb") as fh:
            torch.save({"format": FORMAT, **payload}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, (OSError, RuntimeError)) and is_disk_full(exc):
            raise DiskFullError(
                f"{path}: disk full while saving the checkpoint; the unfinished file was removed "
                f"and {kept}. Free space, then go on"
            ) from None
        raise
    return path


def _tensor_bytes(obj: Any) -> int:
    """Bytes of the tensors in a (nested) checkpoint payload."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(v) for v in obj)
    return 0


@fill_doc
def load_checkpoint(path: str | Path, map_location="cpu") -> dict[str, Any]:
    """Load a neurokit checkpoint, or wrap a bare state_dict (e.g. CBraMod's ``pretrained_weights.pth``)
    as ``{"model": "cbramod", "state_dict": sd}``.

    Parameters
    ----------
    %(checkpoint_path)s
    map_location : str, torch.device or callable
        Where the tensors are read to (``torch.load``'s ``map_location``).

    Returns
    -------
    dict
        The checkpoint's entries (``format``, ``kind``, ``model``, ``model_config``, ``state_dict``…).

    Raises
    ------
    FileNotFoundError
        Missing file.
    WeightsError
        A file that would run code on loading (read with ``torch.load(weights_only=True)``), that is not a
        readable PyTorch file, or a neurokit checkpoint of another format version.
    ValueError
        A file that is neither a neurokit checkpoint nor a state_dict.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.pt")
    >>> torch.save({"w": torch.ones(1)}, p)
    >>> load_checkpoint(p)["model"]
    'cbramod'
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    obj = safe_load(path, map_location)  # weights_only=True: a file that would run code is refused
    check_format(obj, path)
    if isinstance(obj, dict) and obj.get("format") == FORMAT:
        return obj
    from neurokit._utils.errors import WeightsError
    from neurokit.models.weights import read_state_dict

    try:
        sd, _ = read_state_dict(obj)
    except WeightsError:
        raise ValueError(f"{path}: neither a neurokit checkpoint nor a state_dict") from None
    return {"format": "state_dict", "model": "cbramod", "model_config": {}, "state_dict": sd}


def check_channels(want, have, *, store, checkpoint) -> None:
    """Refuse a store whose channels (names or order) differ from those a checkpoint was trained on.

    Parameters
    ----------
    want : sequence of str or None
        The checkpoint's channel names; ``None`` (not recorded) passes.
    have : sequence of str or None
        The store's channel names; ``None`` passes.
    store, checkpoint : str or Path
        Names for the message.

    Raises
    ------
    ChannelMismatchError
        The lists differ; the message names missing and extra channels (or says the order differs).

    Examples
    --------
    >>> check_channels(["Cz", "Pz"], ["Cz", "Pz"], store="s.h5", checkpoint="best.pt")
    >>> check_channels(["Cz", "Pz"], ["Pz", "Cz"], store="s.h5", checkpoint="best.pt")
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.ChannelMismatchError: s.h5: channel set differs from the checkpoint best.pt: ...
    """
    from neurokit._utils.errors import ChannelMismatchError

    if want is None or have is None or list(want) == list(have):
        return
    missing = [c for c in want if c not in have]
    extra = [c for c in have if c not in want]
    order = ", same names in another order" if not missing and not extra else ""
    raise ChannelMismatchError(
        f"{store}: channel set differs from the checkpoint {checkpoint}: trained on channels {list(want)[:6]}… "
        f"({len(want)}); the store has {list(have)[:6]}… ({len(have)}) (missing {missing[:8]}, extra {extra[:8]}{order}). "
        "Prepare the store with the checkpoint's channel list (card preprocessing.channels, or channels= of neuro prepare)."
    )


def rng_state() -> dict[str, Any]:
    """The random-number generators' states, to store in a checkpoint: PyTorch's CPU generator (``"torch"``) and,
    when CUDA is available, every GPU's (``"cuda"``).

    Returns
    -------
    dict
        ``{"torch": ByteTensor, "cuda": list of ByteTensor}`` (``"cuda"`` only with CUDA).

    Examples
    --------
    >>> st = rng_state()
    >>> a = torch.rand(1); set_rng_state(st); torch.equal(a, torch.rand(1))
    True
    """
    st: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict[str, Any]) -> None:
    """Restore the generators' states saved by :func:`rng_state` (the CUDA ones only when CUDA is available).

    Parameters
    ----------
    st : dict
        ``"torch"`` and optionally ``"cuda"`` entries, as :func:`rng_state` returns; a missing entry is left alone.

    Examples
    --------
    >>> st = rng_state()
    >>> a = torch.rand(1); set_rng_state(st); torch.equal(a, torch.rand(1))
    True
    """
    if "torch" in st:
        torch.set_rng_state(st["torch"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


#: store attributes that define what a sample means: a run never mixes stores that differ in these
DATA_FIELDS = ("card", "recipe", "ch_names", "units")


def data_differences(expected: dict[str, Any], actual: dict[str, Any], fields=DATA_FIELDS) -> dict[str, tuple]:
    """The fields of ``fields`` in which two descriptions of stored data differ.

    Dict-valued fields (the recipe) are compared key by key and reported as ``"recipe.h_freq"``; tuples and
    lists compare equal.

    Parameters
    ----------
    expected, actual : dict
        Store attributes (``PatchStore.attrs``) or a checkpoint's provenance (``card``, ``recipe`` and
        ``store_attrs``, flattened by :func:`data_description`). A field absent from ``expected`` (or ``None``
        there) is not compared (older checkpoints).
    fields : sequence of str
        The fields to compare (default :data:`DATA_FIELDS`).

    Returns
    -------
    dict
        Differing field name → ``(expected value, actual value)``.

    Examples
    --------
    >>> data_differences({"recipe": {"h_freq": 75.0}}, {"recipe": {"h_freq": 40.0}})
    {'recipe.h_freq': (75.0, 40.0)}
    """
    out: dict[str, tuple] = {}
    for f in fields:
        if f not in expected or expected[f] is None:
            continue
        a, b = expected[f], actual.get(f)
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                if _norm(a.get(k)) != _norm(b.get(k)):
                    out[f"{f}.{k}"] = (a.get(k), b.get(k))
        elif _norm(a) != _norm(b):
            out[f] = (a, b)
    return out


def _norm(v):
    return list(v) if isinstance(v, tuple) else v


def data_description(ck: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint's record of the data it was trained on, in store-attribute form.

    Parameters
    ----------
    ck : dict
        A checkpoint (:func:`load_checkpoint`): its ``store_attrs``, ``card`` and ``recipe`` entries are read.

    Returns
    -------
    dict
        ``store_attrs`` with ``card`` and ``recipe`` set from the checkpoint's own entries where recorded.

    Examples
    --------
    >>> data_description({"store_attrs": {"units": "100 uV"}, "recipe": {"sfreq": 200}})
    {'units': '100 uV', 'recipe': {'sfreq': 200}}
    """
    return {**(ck.get("store_attrs") or {}), **{k: ck[k] for k in ("card", "recipe") if ck.get(k) is not None}}


def check_same_data(expected: dict[str, Any], actual: dict[str, Any], *, what: str, fields=DATA_FIELDS) -> None:
    """Refuse data that differ from those expected (a run never mixes data prepared differently).

    Parameters
    ----------
    expected, actual : dict
        Descriptions of stored data, as :func:`data_differences` takes them.
    what : str
        Starts the message (e.g. ``"runs/pt/last.pt: resume"``).
    fields : sequence of str
        The fields to compare (default :data:`DATA_FIELDS`).

    Raises
    ------
    ConfigError
        The data differ; the message names every differing field with both values.

    Examples
    --------
    >>> check_same_data({"units": "100 uV"}, {"units": "100 uV"}, what="resume")
    >>> check_same_data({"units": "100 uV"}, {"units": "uV"}, what="resume")
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.ConfigError: resume: the data differ in units (units: '100 uV' → 'uV'); ...
    """
    from neurokit._utils.errors import ConfigError

    diff = data_differences(expected, actual, fields)
    if diff:
        shown = "; ".join(f"{k}: {_short(a)} → {_short(b)}" for k, (a, b) in diff.items())
        raise ConfigError(
            f"{what}: the data differ in {', '.join(diff)} ({shown}); a run never mixes data "
            "prepared differently: prepare the store as before, or start a new run"
        )


def _short(v, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def check_format(obj: Any, name: str | Path) -> None:
    """Refuse a neurokit checkpoint of another format version than :data:`FORMAT` (one line naming both).

    Parameters
    ----------
    obj : object
        What the file held; anything but a dict with a ``"format": "neurokit-checkpoint/N"`` entry passes.
    name : str or Path
        The file, for the message.

    Raises
    ------
    WeightsError
        ``obj`` is a dict whose ``format`` is ``neurokit-checkpoint/N`` with another ``N``.

    Examples
    --------
    >>> check_format({"format": FORMAT}, "last.pt")  # passes
    >>> check_format({"format": "neurokit-checkpoint/0"}, "old.pt")
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.WeightsError: old.pt: checkpoint format 'neurokit-checkpoint/0'; ...
    """
    from neurokit._utils.errors import WeightsError

    fmt = obj.get("format") if isinstance(obj, dict) else None
    if isinstance(fmt, str) and fmt.startswith(FORMAT.split("/")[0] + "/") and fmt != FORMAT:
        raise WeightsError(
            f"{name}: checkpoint format {fmt!r}; this neurokit reads {FORMAT!r}. Use the neurokit "
            "version that wrote it (or one that converts it)"
        )


#: facts of the data that pretrained weights depend on, by the name ``allow_mismatch`` takes
DATA_FACTS = {"sfreq": "sampling rate (Hz)", "patch": "patch length (samples)", "units": "units"}

#: what CBraMod's released weights were pretrained on (Wang et al., ICLR 2025, §3: EEG resampled to 200 Hz,
#: 1-s patches of 200 samples, amplitudes in units of 100 µV); a bare CBraMod state dict records no facts
CBRAMOD_RELEASE_FACTS = {"sfreq": 200.0, "patch": 200, "units": "100 uV"}


@fill_doc
def data_facts(attrs: dict[str, Any] | None, sample_shape=None) -> dict[str, Any]:
    """The :data:`DATA_FACTS` of stored data: ``sfreq`` (store attribute, else the recipe's), ``patch`` (the
    last axis of an EEG sample) and ``units``; facts not recorded are left out.

    Parameters
    ----------
    attrs : dict or None
        The store's attributes (``modality``, ``sfreq`` in Hz, ``units``, ``recipe``).
    %(sample_shape)s

    Returns
    -------
    dict
        ``sfreq`` (float, Hz), ``patch`` (int, samples) and ``units`` (str), where known.

    Examples
    --------
    >>> data_facts({"modality": "eeg", "sfreq": 200, "units": "100 uV"}, (3, 4, 200))
    {'sfreq': 200.0, 'patch': 200, 'units': '100 uV'}
    """
    attrs = dict(attrs or {})
    out: dict[str, Any] = {}
    sfreq = attrs.get("sfreq")
    if sfreq is None:
        sfreq = (attrs.get("recipe") or {}).get("sfreq") if isinstance(attrs.get("recipe"), dict) else None
    if sfreq is not None:
        out["sfreq"] = float(sfreq)
    if (attrs.get("modality") or "eeg") == "eeg" and sample_shape is not None and len(sample_shape) == 3:
        out["patch"] = int(sample_shape[-1])
    if attrs.get("units") is not None:
        out["units"] = str(attrs["units"])
    return out


def check_data_facts(
    trained: dict[str, Any], have: dict[str, Any], *, checkpoint: str | Path, store: str | Path, allow: Any = ()
) -> dict[str, list]:
    """Compare the :func:`data_facts` a checkpoint's weights were trained on with a store's.

    Parameters
    ----------
    trained, have : dict
        Facts of the checkpoint's training data and of the store (a fact missing on either side passes).
    checkpoint, store : str or Path
        Names for the message.
    allow : collection of str
        Facts (:data:`DATA_FACTS` keys) whose difference is accepted (CLI ``--allow-mismatch sfreq,units``).

    Returns
    -------
    dict
        The differing facts ``name → [checkpoint's, store's]`` that ``allow`` accepted (to record in a report).

    Raises
    ------
    ConfigError
        A fact differs and is not in ``allow``; the message names both values and the option.

    Examples
    --------
    >>> check_data_facts({"sfreq": 200.0}, {"sfreq": 256.0}, checkpoint="pt.pt", store="s.h5", allow=["sfreq"])
    {'sfreq': [200.0, 256.0]}
    """
    from neurokit._utils.errors import ConfigError

    allow = set(allow or ())
    diff = {k: [trained[k], have[k]] for k in DATA_FACTS if k in trained and k in have and trained[k] != have[k]}
    refused = {k: v for k, v in diff.items() if k not in allow}
    if refused:
        said = "; ".join(
            f"{DATA_FACTS[k]}: {a} in the checkpoint's training data, {b} in the store" for k, (a, b) in refused.items()
        )
        names = ",".join(refused)
        raise ConfigError(
            f"{store}: does not match {checkpoint} ({said}); its weights depend on it. Prepare the store "
            f"as the checkpoint's data, or pass allow_mismatch={names!r} "
            "to go on anyway (it is recorded in the report)"
        )
    return {k: v for k, v in diff.items() if k in allow}


def check_allow_mismatch(allow: Any) -> list[str]:
    """``allow_mismatch`` as a list of :data:`DATA_FACTS` names.

    Parameters
    ----------
    allow : str, sequence of str or None
        A comma-separated string (``"sfreq,units"``) or a list; empty or ``None`` allows nothing.

    Returns
    -------
    list of str

    Raises
    ------
    ConfigError
        A name that is not a fact.

    Examples
    --------
    >>> check_allow_mismatch("sfreq, units")
    ['sfreq', 'units']
    """
    from neurokit._utils.errors import ConfigError

    if not allow:
        return []
    names = [a.strip() for a in (allow.split(",") if isinstance(allow, str) else allow) if str(a).strip()]
    bad = [a for a in names if a not in DATA_FACTS]
    if bad:
        raise ConfigError(
            f"allow_mismatch={','.join(bad)!r}: not a fact checked between a checkpoint and a store; "
            f"allowed: {', '.join(DATA_FACTS)}"
        )
    return names


@fill_doc
def check_resume_data(ck: dict[str, Any], attrs: dict[str, Any], *, what: str, sample_shape=None) -> None:
    """A checkpoint resumed on a store must show that it was trained on the same data: its recorded card and
    recipe (and units, sampling rate) equal the store's. A checkpoint that records no ``recipe`` cannot
    show it and is refused.

    Parameters
    ----------
    ck : dict
        The checkpoint (:func:`load_checkpoint`).
    attrs : dict
        The store's attributes.
    what : str
        Starts the messages (e.g. ``"runs/pt/last.pt: resume"``).
    %(sample_shape)s
        Not compared (kept for the callers' signature).

    Raises
    ------
    ConfigError
        No ``recipe`` recorded while the store has one; or the data differ (:func:`check_same_data`).

    Examples
    --------
    >>> attrs = {"recipe": {"sfreq": 200}, "units": "100 uV"}
    >>> check_resume_data({"store_attrs": attrs, "recipe": {"sfreq": 200}}, attrs, what="resume")
    """
    from neurokit._utils.errors import ConfigError

    desc = data_description(ck)
    if attrs.get("recipe") and not desc.get("recipe"):
        raise ConfigError(
            f"{what}: the checkpoint records no recipe (how its data were prepared), so it cannot show "
            "that it matches the store; resuming could train on data of other units or rate. Start a "
            "new run (overwrite=True)"
        )
    check_same_data(desc, attrs, what=what, fields=(*DATA_FIELDS, "sfreq"))


def init_fingerprint(init: str | Path | None) -> str | None:
    """What a resumed or reused fine-tuning run must start from: the SHA-256 of its initial weights file.

    Parameters
    ----------
    init : path or str, optional
        A weights file, or a Hub name (``hub:ORG/NAME``, whose revision, commit and hash a run records beside).

    Returns
    -------
    str or None
        The file's SHA-256, the Hub name as given, or ``None`` without ``init``.

    Examples
    --------
    >>> init_fingerprint(None), init_fingerprint("hub:org/name")
    (None, 'hub:org/name')
    """
    if init is None:
        return None
    from neurokit._utils.hashing import file_sha256

    path = Path(str(init)).expanduser()
    if not path.is_file():  # a Hub name: its revision, commit and hash are recorded under init_weights
        return str(init)
    return file_sha256(path)
