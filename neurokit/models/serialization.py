"""Reading ``torch.save`` files without running code: ``torch.load(weights_only=True)`` with an explicit list of
the few globals a weights file may name beyond torch's own types. Every checkpoint, state dict and Hub file
neurokit reads goes through :func:`safe_load`."""

from __future__ import annotations

import importlib
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

import torch

from neurokit._utils.errors import WeightsError

#: globals (``module.name``) a weights file may name besides torch's own: NumPy scalars/arrays and paths.
#: Rebuilding them calls no code of the file's choosing.
SAFE_GLOBALS = (
    "numpy.ndarray",
    "numpy.dtype",
    "numpy.core.multiarray.scalar",
    "numpy._core.multiarray.scalar",
    "numpy.core.multiarray._reconstruct",
    "numpy._core.multiarray._reconstruct",
    "pathlib.Path",
    "pathlib.PosixPath",
    "pathlib.WindowsPath",
    "pathlib.PurePosixPath",
    "pathlib.PureWindowsPath",
)
_NUMPY_DTYPE = re.compile(r"^numpy\.dtypes\.\w+DType$")


def _is_safe(name: str) -> bool:
    return name in SAFE_GLOBALS or bool(_NUMPY_DTYPE.match(name))


def _resolve_global(name: str):
    module, _, attr = name.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


def safe_load(path: str | Path, map_location: Any = "cpu", *, error: type[Exception] = WeightsError) -> Any:
    """``torch.load(path, weights_only=True)``, allowing only :data:`SAFE_GLOBALS` beyond torch's own types.

    Parameters
    ----------
    path : str or Path
        A file written by ``torch.save``, or a ``.safetensors`` file (read with the safetensors library:
        :func:`load_safetensors`; tensors only, nothing in it can run code).
    map_location : str, torch.device or callable
        Where the tensors are placed (``torch.load``'s ``map_location``).
    error : exception class
        Raised for a refused or unreadable file (default :class:`~neurokit._utils.errors.WeightsError`).

    Returns
    -------
    object
        What the file holds (a dict for checkpoints and state dicts).

    Raises
    ------
    WeightsError (or ``error``)
        The file would import anything outside :data:`SAFE_GLOBALS` (a pickled custom class: loading it may
        run code), or it is not a readable ``torch.save`` file.
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> import torch, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); torch.save({"w": torch.ones(2)}, p)
    >>> safe_load(p)["w"].tolist()
    [1.0, 1.0]
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such weights file")
    if path.suffix == ".safetensors" or _is_safetensors(path):
        return load_safetensors(path, map_location, error=error)
    try:
        names = list(torch.serialization.get_unsafe_globals_in_checkpoint(str(path)))
    except Exception:  # not a zip-format torch.save file: the weights_only load below says what is wrong
        names = []
    unsafe = [n for n in names if not _is_safe(n)]
    if unsafe:
        raise error(
            f"{path}: refused, loading it would import and call {', '.join(unsafe[:5])} (code of the file's choosing); "
            "neurokit reads weights with torch.load(weights_only=True): save a state dict or a neurokit checkpoint instead"
        )
    allowed = [g for g in (_resolve_global(n) for n in names) if g is not None]
    if any(n.startswith("numpy.") for n in names):  # a NumPy dtype is rebuilt through its class in numpy.dtypes
        dtypes = importlib.import_module("numpy.dtypes")
        allowed += [
            getattr(dtypes, a) for a in dir(dtypes) if a.endswith("DType") and isinstance(getattr(dtypes, a), type)
        ]
    try:
        with torch.serialization.safe_globals(allowed), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected pickle protocol")
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        code = [ln for ln in lines if "GLOBAL" in ln or "but got" in ln]
        if code:
            raise error(
                f"{path}: refused, loading it would run code of the file's choosing ({code[0][:200]}); "
                "neurokit reads weights with torch.load(weights_only=True)"
            ) from None
        what = next((ln for ln in lines if "Unsupported" in ln), lines[-1] if lines else "")
        raise error(
            f"{path}: refused, torch.load(weights_only=True) cannot read it safely ({what[:200]}); "
            "weights must be a torch.save file of tensors (a state dict or a neurokit checkpoint)"
        ) from None
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise error(f"{path}: not a readable PyTorch weights file ({type(exc).__name__}: {first})") from None


def _is_safetensors(path: Path) -> bool:
    """Whether ``path`` starts like a safetensors file (an 8-byte little-endian header length, then ``{``),
    whatever its name (Hub caches may name blobs by hash)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(9)
    except OSError:
        return False
    return len(head) == 9 and head[8:9] == b"{" and 2 <= int.from_bytes(head[:8], "little") < (100 << 20)


def load_safetensors(path: str | Path, map_location: Any = "cpu", *, error: type[Exception] = WeightsError) -> dict:
    """The tensors of a safetensors file (``safetensors.torch.load_file``), as a state dict.

    Parameters
    ----------
    path : str or Path
        A ``.safetensors`` file (e.g. braindecode's CBraMod weights on the Hub).
    map_location : str or torch.device
        Device of the tensors (a callable or dict places them on the CPU).
    error : exception class
        Raised for an unreadable file.

    Returns
    -------
    dict of str to torch.Tensor

    Raises
    ------
    WeightsError (or ``error``)
        Not a readable safetensors file (truncated, bad header).

    Examples
    --------
    >>> import torch, tempfile, os
    >>> from safetensors.torch import save_file
    >>> p = os.path.join(tempfile.mkdtemp(), "w.safetensors"); save_file({"w": torch.ones(2)}, p)
    >>> load_safetensors(p)["w"].tolist()
    [1.0, 1.0]
    """
    try:
        from safetensors.torch import load_file
    except ImportError:  # pragma: no cover - a dependency of neurokit
        raise error(f"{path}: a safetensors file; install the safetensors package to read it") from None
    device = str(map_location) if isinstance(map_location, (str, torch.device)) else "cpu"
    try:
        return dict(load_file(str(path), device=device))
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise error(f"{path}: not a readable safetensors file ({type(exc).__name__}: {first})") from None
