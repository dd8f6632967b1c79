"""Reading ``torch.save`` files without running code: ``torch.load(weights_only=True)`` with an explicit list of
the few globals a weights file may name beyond torch's own types. Every checkpoint, state dict and Hub file
neurokit reads goes through :func:`safe_load`."""

from __future__ import annotations

import importlib
import json
import pickle
import re
import struct
import warnings
import zipfile
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


#: Bounds checked before a weights file is read, so that a crafted file cannot make neurokit allocate without
#: limit. The largest family neurokit builds (SiT base, 768 wide, 12 blocks) holds 176 tensors and 331 MiB of
#: float32 weights; a checkpoint adds two AdamW moments and a step per tensor (about 4× the tensors, 3× the
#: bytes). The bounds leave room for wider or deeper models configured by hand: 250× that tensor count and about
#: 25× those bytes. A file past any of them is refused in one line naming the file and the bound.
MAX_TENSORS = 50_000
#: total bytes a file may declare (tensor data of a safetensors file, members of a ``torch.save`` archive)
MAX_DECLARED_BYTES = 8 << 30
#: a safetensors file's JSON header, and a ``torch.save`` archive's central directory
MAX_HEADER_BYTES = 16 << 20
#: a ``torch.save`` archive's pickle (``data.pkl``: the container around the tensors, a few hundred KiB for the
#: largest checkpoint); unpickling it may take some tens of times its size in memory
MAX_PICKLE_BYTES = 8 << 20
#: members a ``torch.save`` archive holds besides one per tensor storage (data.pkl, version, byteorder…)
_ARCHIVE_EXTRA_MEMBERS = 16


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n < 1 << 30 else f"{n / 2**30:,.1f} GiB"


def check_weights_bounds(path: str | Path, *, error: type[Exception] = WeightsError) -> None:
    """Refuse a weights file whose layout would make reading it allocate without limit, before reading it.

    A safetensors file: its header length within :data:`MAX_HEADER_BYTES` and the file, at most
    :data:`MAX_TENSORS` tensors (counted before and after parsing the header: what the safetensors library does
    not bound), then every tensor's dtype, shape and byte range against the file by the library itself
    (``safetensors.safe_open``). Any other file must be a zip-format ``torch.save``
    archive (torch ≥ 1.6; a legacy pickle declares its storages' sizes only while being unpickled): at most
    :data:`MAX_TENSORS` members (plus a few), its central directory within :data:`MAX_HEADER_BYTES`, its members'
    declared sizes together within the file's size (``torch.save`` stores them uncompressed) and
    :data:`MAX_DECLARED_BYTES`, its pickle within :data:`MAX_PICKLE_BYTES`. Reads at most the header (or the
    archive's end record and central directory); memory stays within a few times :data:`MAX_HEADER_BYTES`.

    Parameters
    ----------
    path : str or Path
        The weights file.
    error : exception class
        Raised for a file past a bound (default :class:`~neurokit._utils.errors.WeightsError`).

    Raises
    ------
    WeightsError (or ``error``)
        One line naming the file, what it declares and the bound it passes.

    Examples
    --------
    >>> import torch, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); torch.save({"w": torch.ones(2)}, p)
    >>> check_weights_bounds(p)  # within every bound: nothing raised
    """
    path = Path(path)
    size = path.stat().st_size
    if path.suffix == ".safetensors" or _is_safetensors(path):
        _check_safetensors(path, size, error)
    else:
        _check_archive(path, size, error)


def _check_safetensors(path: Path, size: int, error: type[Exception]) -> None:
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise error(f"{path}: not a readable safetensors file ({size} bytes: no header length)")
        n = int.from_bytes(head, "little")
        if n > MAX_HEADER_BYTES:
            raise error(
                f"{path}: refused, its safetensors header declares {n:,} bytes (bound {_mib(MAX_HEADER_BYTES)})"
            )
        if n > size - 8:
            raise error(
                f"{path}: not a readable safetensors file (truncated: its header declares {n:,} bytes, "
                f"the file holds {size - 8:,} after the length)"
            )
        header = fh.read(n)
    count = header.count(b'"data_offsets"')  # before parsing: JSON of a million entries costs ~1 GB
    if count > MAX_TENSORS:
        raise error(f"{path}: refused, its safetensors header declares {count:,} tensors (bound {MAX_TENSORS:,})")
    try:
        meta = json.loads(header)
        if not isinstance(meta, dict):
            raise ValueError("the header is not a JSON object")
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not a readable safetensors file (bad header: {str(exc)[:200]})") from None
    parsed = len(meta) - ("__metadata__" in meta)  # keys spelt with JSON escapes pass the byte count above
    if parsed > MAX_TENSORS:
        raise error(f"{path}: refused, its safetensors header declares {parsed:,} tensors (bound {MAX_TENSORS:,})")
    # every tensor's dtype, shape and offsets against the file: the safetensors library's own validation (what it
    # does not bound, the tensor count and the header's size before parsing, is checked above)
    try:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as fh:
            fh.keys()
    except ImportError:  # pragma: no cover - safetensors is a dependency
        raise error(f"{path}: a safetensors file; install the safetensors package to read it") from None
    except Exception as exc:  # the library's SafetensorError names what is wrong
        first = (str(exc).splitlines() or [""])[0][:200]
        raise error(f"{path}: refused, not a valid safetensors file ({type(exc).__name__}: {first})") from None


def _zip_directory(path: Path, size: int) -> tuple[int, int] | None:
    """(members, central directory bytes) from a zip's end records, or None when there are none."""
    with open(path, "rb") as fh:
        tail_at = max(0, size - (1 << 16) - 22)
        fh.seek(tail_at)
        tail = fh.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return None
        _, _, _, _, count, cd_size, _, _ = struct.unpack("<4s4H2LH", tail[at : at + 22])
        loc = tail[at - 20 : at] if at >= 20 else b""
        if loc[:4] == b"PK\x06\x07":  # zip64: the counts are in the zip64 end record
            (offset,) = struct.unpack("<Q", loc[8:16])
            if offset + 56 > size:
                return (count, size + 1)
            fh.seek(offset)
            rec = fh.read(56)
            if rec[:4] == b"PK\x06\x06":
                count, cd_size = struct.unpack("<QQ", rec[32:48])
        return count, cd_size


def _check_archive(path: Path, size: int, error: type[Exception]) -> None:
    found = _zip_directory(path, size)
    if found is None:
        raise error(
            f"{path}: refused, not a zip-format torch.save file (torch >= 1.6 writes one){' (empty)' if size == 0 else ''}: "
            "a weights file is a .safetensors file or a torch.save archive (a legacy pickle, whose sizes cannot be "
            "bounded before reading it, must be re-saved with torch.save)"
        )
    count, cd_size = found
    if count > MAX_TENSORS + _ARCHIVE_EXTRA_MEMBERS:
        raise error(f"{path}: refused, its archive declares {count:,} members (bound {MAX_TENSORS:,} tensors)")
    if cd_size > min(MAX_HEADER_BYTES, size):
        raise error(
            f"{path}: refused, its archive's directory declares {cd_size:,} bytes, past the bound of "
            f"min({_mib(MAX_HEADER_BYTES)}, the file's {size:,} bytes)"
        )
    try:
        with zipfile.ZipFile(path) as zf:
            members = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, struct.error) as exc:
        raise error(f"{path}: not a readable PyTorch weights file (a damaged zip archive: {str(exc)[:200]})") from None
    total = sum(m.file_size for m in members)
    if total > min(size, MAX_DECLARED_BYTES):
        big = max(members, key=lambda m: m.file_size)
        raise error(
            f"{path}: refused, its archive declares {total:,} bytes of members (largest {big.filename!r}: "
            f"{big.file_size:,}), past the bound of min({_mib(MAX_DECLARED_BYTES)}, the file's {size:,} bytes)"
        )
    pkl = [m for m in members if m.filename.endswith(".pkl") and m.file_size > MAX_PICKLE_BYTES]
    if pkl:
        raise error(
            f"{path}: refused, its pickle {pkl[0].filename!r} declares {pkl[0].file_size:,} bytes "
            f"(bound {_mib(MAX_PICKLE_BYTES)})"
        )


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
        run code), it is not a readable ``torch.save`` file, or it is past a bound of :func:`check_weights_bounds`
        (tensor count, header or directory size, declared bytes against the file's size), checked before reading.
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
    check_weights_bounds(path, error=error)
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
        Not a readable safetensors file (truncated, bad header), or one past a bound of
        :func:`check_weights_bounds` (header size, tensor count, declared bytes), checked before reading it.

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
    _check_safetensors(Path(path), Path(path).stat().st_size, error)
    device = str(map_location) if isinstance(map_location, (str, torch.device)) else "cpu"
    try:
        return dict(load_file(str(path), device=device))
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise error(f"{path}: not a readable safetensors file ({type(exc).__name__}: {first})") from None
