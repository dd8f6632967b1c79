"""HDF5 patch stores: one file of patch tensors, labels and per-sample ids, with their provenance.

Layout (h5py)::

    /patches   (n_samples, *sample_shape) float32 (or float16: ``dtype="float16"``, half the bytes; its
               readers return float32), chunked one sample per chunk (``(1, *sample_shape)``), no
               filter by default: a window is one contiguous chunk, read straight into a batch
               (:meth:`PatchStore.read_into`); stores of any other chunking or with a filter (lzf) read too
               EEG: (n, C, N, 200); surface fMRI: (n, F, N, V)
    /labels    (n_samples,) int64 class index (-1 = none) or float32 target
    /meta/<k>  (n_samples,) per-sample columns: subject, session, run (strings), onset (s), …
    or, in the frame layout (``layout="frames"``: surface fMRI, overlapping tubelets), each frame stored once:
    /frames        (n_frames, n_template_vertices) float32, one frame per chunk
    /patch_index   (n_patches, V) int32: template vertex of each patch position
    /sample_start  (n_samples,) int64: first row of /frames of each sample; a sample is the ``tubelet``
                   frames from there, cut into patches when read: ``frames[s:s+T][:, patch_index]``
    attrs      format, modality, complete, plus what the writer is given: ch_names, sfreq, recipe,
               card, sources (path + SHA-256), label_names, … (JSON-encoded where not scalar); read back
               typed as :class:`StoreMeta` (:attr:`PatchStore.info`). A float16 store also says
               ``sample_dtype = "float16"`` (and ``n_float16_clipped`` when values were clipped); a float32
               store has neither, so its bytes are those of stores written before the option existed

A store is written to ``<name>.partial`` and renamed into place only after ``complete=True`` is set, so a
``prepare`` that fails or is killed never leaves a file that reads as complete.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import threading
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from neurokit._utils.disk import check_free_space, is_disk_full
from neurokit._utils.errors import ConfigError, DiskFullError, StoreError

FORMAT = "neurokit-patch-store/1"
#: the dtypes a store's samples may be kept in (``PatchStoreWriter(..., dtype=)``); readers return float32
STORE_DTYPES = ("float32", "float16")
#: the largest finite float16 (``numpy.finfo(numpy.float16).max``): 6.55 V in the EEG stores' 100 µV units
FLOAT16_MAX = 65504.0
#: what a float16 store does with values beyond ±:data:`FLOAT16_MAX` (a card's ``preprocessing`` block:
#: ``float16_overflow``): ``"refuse"`` (default) or ``"clip"``; never stored as inf
FLOAT16_OVERFLOW = ("refuse", "clip")
#: the columns under ``meta/`` every store has (the writer writes them; splits, leak checks and reports read them)
REQUIRED_META = ("subject", "session", "run", "onset")
logger = logging.getLogger("neurokit")
_STR = None  # filled lazily with h5py.string_dtype()


def _string_dtype():
    import h5py

    global _STR
    if _STR is None:
        _STR = h5py.string_dtype("utf-8")
    return _STR


def _encode(v: Any):
    if isinstance(v, (str, int, float, bool, np.integer, np.floating)):
        return v
    return "json:" + json.dumps(v, default=str)


def _decode(v: Any):
    if isinstance(v, bytes):
        v = v.decode()
    if isinstance(v, str) and v.startswith("json:"):
        return json.loads(v[5:])
    if isinstance(v, np.generic):
        return v.item()
    return v


def _as_tuple(v: Any, key: str, where: str) -> tuple | None:
    if v is None:
        return None
    if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple, np.ndarray)):
        raise StoreError(f"{where}: attribute {key!r} is {v!r}, expected a list")
    return tuple(v)


def _as_dict(v: Any, key: str, where: str) -> dict:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise StoreError(f"{where}: attribute {key!r} is {type(v).__name__} {v!r}, expected a mapping")
    return dict(v)


def _as_number(kind, v: Any, key: str, where: str):
    if v is None:
        return None
    try:
        return kind(v)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{where}: attribute {key!r} is {v!r}, expected {kind.__name__}") from exc


#: attribute → how :meth:`StoreMeta.from_attrs` reads it (``"str"``, ``"int"``, ``"float"``, ``"bool"``,
#: ``"list"`` (a tuple), ``"dict"``); every other attribute lands in :attr:`StoreMeta.extra`
_META_KINDS = {
    "format": "str",
    "complete": "bool",
    "modality": "str",
    "card": "str",
    "card_body": "dict",
    "task": "str",
    "label_names": "list",
    "recipe": "dict",
    "units": "str",
    "n_samples": "int",
    "sources": "list",
    "neurokit_version": "str",
    "ch_names": "list",
    "sfreq": "float",
    "patch_size": "int",
    "n_rejected": "int",
    "dropped": "list",
    "skipped": "list",
    "participants": "dict",
    "template": "str",
    "grid": "str",
    "n_patches": "int",
    "vertices_per_patch": "int",
    "tubelet": "int",
    "sample_layout": "str",
    "layout": "str",
    "frames_per_sample": "int",
    "hemispheres": "list",
    "hemisphere": "str",
    "mesh": "str",
    "tr": "float",
    "onset_unit": "str",
    "sample_dtype": "str",
}


@dataclass(frozen=True)
class StoreMeta:
    """The store-level metadata of a patch store (its HDF5 attributes), typed.

    Built from the attributes by :meth:`from_attrs`; read as :attr:`PatchStore.info` and
    :attr:`neurokit.data.dataset.PatchDataset.info`. Attributes a store lacks are ``None`` (or empty), so
    EEG and surface stores read through the same object. The raw mapping stays available as
    :attr:`PatchStore.attrs`.

    Attributes
    ----------
    format : str
        Store format (:data:`FORMAT`).
    complete : bool
        Whether ``prepare`` finished the store.
    modality : str
        ``"eeg"`` or ``"surface"`` (stores written before the attribute existed read as ``"eeg"``).
    card, task : str | None
        Data card name and card task the store was prepared for.
    card_body : dict
        The whole data card (YAML content) at preparation time; empty when not recorded.
    label_names : tuple of str
        Class names, index = stored label; empty for unlabelled or regression stores.
    recipe : dict
        The preprocessing recipe used (:class:`~neurokit.cards.recipes.EEGRecipe` or
        :class:`~neurokit.cards.recipes.SurfaceRecipe` as a dict).
    units : str | None
        Unit of EEG samples (``"100 uV"``).
    n_samples : int | None
        Samples in the store (set when it is completed).
    sources : tuple of dict
        One entry per file read: ``path``, ``sha256`` and, for EEG, what was applied to it.
    neurokit_version : str | None
        Version of neurokit that wrote the store (EEG).
    ch_names : tuple of str | None
        EEG channel names (10-05 labels), in stored order.
    sfreq : float | None
        EEG sampling rate in Hz.
    patch_size : int | None
        EEG samples per patch (200).
    n_rejected : int | None
        EEG windows rejected by amplitude.
    dropped : tuple of str
        EEG recordings the recipe dropped by rule (``min_duration_s``).
    skipped : tuple of str
        EEG recordings ``skip_bad`` passed over (unreadable, or beyond float16's range; written only when some were).
    participants : dict
        BIDS ``participants.tsv`` columns keyed by store subject id.
    template, grid : str | None
        Surface template (``"ico6"``) and patch grid (``"ico6/ico2"``).
    n_patches, vertices_per_patch, tubelet : int | None
        Surface sample shape ``(tubelet, n_patches, vertices_per_patch)``.
    sample_layout : str | None
        Axis names of one surface sample, ``"(T, n_patches, V)"``.
    layout : str | None
        ``"frames"`` for the frame layout (frames stored once, tubelets gathered when read).
    frames_per_sample : int | None
        Frame layout: frames per sample.
    hemispheres : tuple of str
        Surface hemispheres in the store (``"L"``, ``"R"``); ``hemisphere`` joins them with ``+``.
    hemisphere : str | None
    mesh : str | None
        Surface mesh of the source files (``"fsaverage5"``, ``"fs_LR_32k"``, ``"ico6"``…).
    tr : float | None
        Surface repetition time in s; NaN when no file stated one (then ``onset_unit == "frames"``).
    onset_unit : str | None
        ``"s"`` or ``"frames"``: unit of the ``onset`` column of surface stores.
    sample_dtype : str
        The dtype the samples are stored in, ``"float32"`` or ``"float16"`` (stores without the attribute:
        ``"float32"``); readers return float32 either way. The HDF5 dataset's own dtype is the record
        (:attr:`PatchStore.sample_dtype`); a store whose attribute says otherwise is refused.
    extra : dict
        Every other attribute, decoded.
    """

    format: str | None = None
    complete: bool = False
    modality: str = "eeg"
    card: str | None = None
    card_body: dict = field(default_factory=dict)
    task: str | None = None
    label_names: tuple = ()
    recipe: dict = field(default_factory=dict)
    units: str | None = None
    n_samples: int | None = None
    sources: tuple = ()
    neurokit_version: str | None = None
    ch_names: tuple | None = None
    sfreq: float | None = None
    patch_size: int | None = None
    n_rejected: int | None = None
    dropped: tuple = ()
    skipped: tuple = ()
    participants: dict = field(default_factory=dict)
    template: str | None = None
    grid: str | None = None
    n_patches: int | None = None
    vertices_per_patch: int | None = None
    tubelet: int | None = None
    sample_layout: str | None = None
    layout: str | None = None
    frames_per_sample: int | None = None
    hemispheres: tuple = ()
    hemisphere: str | None = None
    mesh: str | None = None
    tr: float | None = None
    onset_unit: str | None = None
    sample_dtype: str = "float32"
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any], *, where: str = "store") -> "StoreMeta":
        """Typed metadata from a store's attributes (decoded, as :attr:`PatchStore.attrs`, or raw h5py
        attributes, JSON strings included).

        Parameters
        ----------
        attrs : mapping
            Attribute name → value.
        where : str
            What the attributes belong to (a path), named in errors.

        Raises
        ------
        StoreError
            An attribute of the wrong type (e.g. ``ch_names`` that is not a list), naming ``where``.
        """
        vals = {k: _decode(v) for k, v in attrs.items()}
        kw: dict[str, Any] = {}
        for key, kind in _META_KINDS.items():
            v = vals.pop(key, None)
            if kind == "list":
                v = _as_tuple(v, key, where)
                if v is None and key != "ch_names":
                    v = ()
            elif kind == "dict":
                v = _as_dict(v, key, where)
            elif kind == "bool":
                v = bool(v)
            elif kind in ("int", "float"):
                v = _as_number(int if kind == "int" else float, v, key, where)
            elif v is not None:
                v = str(v)
            kw[key] = v
        kw["modality"] = kw["modality"] or "eeg"
        kw["sample_dtype"] = kw["sample_dtype"] or "float32"
        return cls(**kw, extra=vals)

    def get(self, key: str, default: Any = None) -> Any:
        """The typed value of attribute ``key`` (a field, else :attr:`extra`), or ``default`` when absent."""
        if key in _META_KINDS:
            v = getattr(self, key)
            return default if v is None else v
        return self.extra.get(key, default)

    @property
    def has_tr(self) -> bool:
        """Whether the (surface) store states a TR: onsets are in seconds, not frames."""
        return self.onset_unit != "frames" and self.tr is not None and math.isfinite(self.tr)

    @property
    def window_s(self) -> float:
        """Window length of an EEG store's recipe in s (0 when not recorded)."""
        return float(self.recipe.get("window_s") or 0)

    @property
    def frame_layout(self) -> bool:
        """Whether frames are stored once and samples gathered when read (``layout == "frames"``)."""
        return self.layout == "frames"

    def field_names(self) -> tuple[str, ...]:
        """Names of the typed fields (the attributes :meth:`from_attrs` knows)."""
        return tuple(f.name for f in fields(self) if f.name != "extra")


def store_values(
    x: np.ndarray, dtype: str = "float32", *, overflow: str = "refuse", where: str = "samples"
) -> tuple[np.ndarray, int]:
    """Samples as a store keeps them: float32 as they are, or float16 with the values beyond its range counted and
    refused or clipped (never stored as inf).

    Parameters
    ----------
    x : ndarray, any shape
        Samples (EEG: 100 µV units).
    dtype : {"float32", "float16"}
        The store's sample dtype (:data:`STORE_DTYPES`).
    overflow : {"refuse", "clip"}
        float16: values with ``|x| > 65504`` (:data:`FLOAT16_MAX`) raise :class:`StoreError` (``"refuse"``) or
        are clipped to ±65504 (``"clip"``).
    where : str
        What the samples are (a store, a recording), named in the error.

    Returns
    -------
    values : ndarray
        ``x`` as ``dtype`` (C-contiguous).
    n_out : int
        Values beyond float16's range (clipped when ``overflow="clip"``); 0 for float32.

    Raises
    ------
    StoreError
        float16 values out of range under ``overflow="refuse"``, naming ``where``, the count and the largest.
    ConfigError
        An unknown ``dtype`` or ``overflow``.

    Examples
    --------
    >>> v, n = store_values(np.array([1.0, 7e4, -1e5]), "float16", overflow="clip")
    >>> v.dtype, v.tolist(), n
    (dtype('float16'), [1.0, 65504.0, -65504.0], 2)
    """
    check_store_dtype(dtype, overflow)
    if dtype == "float32":
        return np.ascontiguousarray(x, dtype=np.float32), 0
    x = np.asarray(x)
    big = np.abs(x) > FLOAT16_MAX  # NaN compares False: a NaN stays NaN (prepare refuses those itself)
    n = int(np.count_nonzero(big))
    if n and overflow == "refuse":
        raise StoreError(
            f"{where}: {n} value(s) beyond float16's range (|x| > {FLOAT16_MAX:g}; largest {float(np.abs(x[big]).max()):.6g}), "
            f"of {x.size}; dtype='float16' would store them as inf: set the card's preprocessing float16_overflow: clip, "
            "or prepare with dtype='float32' (or check the recording's units)"
        )
    if n:
        x = np.clip(x, -FLOAT16_MAX, FLOAT16_MAX)
    return np.ascontiguousarray(x, dtype=np.float16), n


def check_store_dtype(dtype: str, overflow: str = "refuse") -> None:
    """Refuse a sample dtype not in :data:`STORE_DTYPES` or an overflow rule not in :data:`FLOAT16_OVERFLOW`.

    Parameters
    ----------
    dtype : str
        The store's sample dtype.
    overflow : str
        What float16 does with values beyond its range.

    Raises
    ------
    ConfigError
        Naming the parameter and the allowed values.

    Examples
    --------
    >>> check_store_dtype("float16", "clip")
    """
    if dtype not in STORE_DTYPES:
        raise ConfigError(f"dtype={dtype!r}: allowed values are {', '.join(map(repr, STORE_DTYPES))}")
    if overflow not in FLOAT16_OVERFLOW:
        raise ConfigError(f"float16_overflow={overflow!r}: allowed values are {', '.join(map(repr, FLOAT16_OVERFLOW))}")


class PatchStoreWriter:
    """Append-only writer of one patch store; use as a context manager.

    Parameters
    ----------
    path : str | Path
        Final path (``.h5``). The data go to ``<path>.partial`` until :meth:`close` succeeds.
    sample_shape : tuple[int, ...]
        Shape of one sample's patch tensor.
    attrs : dict
        Store-level metadata (JSON-serialisable values).
    label_dtype : str
        ``"int64"`` (classes) or ``"float32"`` (regression targets).
    meta_columns : sequence of str
        Names of per-sample string columns (``subject``, ``session``, ``run``, …).
    overwrite : bool
        Replace an existing store at ``path``. Otherwise :class:`FileExistsError`.
    compression : str | None
        h5py filter, e.g. ``"lzf"`` (fast, lossless). Default ``None``: filtered EEG in float32 does not
        compress (lzf kept 100 % of the bytes of EEGMMIDB windows) and lzf made writing ≈ 4× slower.
    patch_index : ndarray of int, shape (n_patches, V), optional
        Frame layout: samples of shape ``(T, n_patches, V)`` are ``T`` consecutive frames (appended with
        :meth:`append_frames`, each once, on the template's vertices) gathered through this table when
        read, so overlapping tubelets cost no extra bytes. Samples are added by :meth:`append_samples`.
    dtype : {"float32", "float16"}
        The dtype the samples (or frames) are stored in. ``"float16"`` halves the file (and a read from disk)
        at a rounding error of at most 2**-11 of each value (an 11-bit significand); readers return float32.
        Default ``"float32"``: the store's bytes are those written before the option existed.
    float16_overflow : {"refuse", "clip"}
        float16: samples beyond ±65504 raise :class:`StoreError` (default) or are clipped and counted
        (:attr:`n_clipped`, the store's ``n_float16_clipped``) (:func:`store_values`).

    Raises
    ------
    ConfigError
        An unknown ``dtype`` or ``float16_overflow``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "half.h5"
    >>> with PatchStoreWriter(p, (2, 1, 200), dtype="float16") as w:
    ...     w.append(np.ones((3, 2, 1, 200)), subject="S1")
    >>> st = PatchStore(p)
    >>> st.sample_dtype, st.info.sample_dtype, st.patches(0).dtype
    ('float16', 'float16', dtype('float32'))
    """

    def __init__(
        self,
        path: str | Path,
        sample_shape: Sequence[int],
        *,
        attrs: dict[str, Any] | None = None,
        label_dtype: str = "int64",
        meta_columns: Sequence[str] = ("subject", "session", "run"),
        overwrite: bool = False,
        compression: str | None = None,
        patch_index: np.ndarray | None = None,
        dtype: str = "float32",
        float16_overflow: str = "refuse",
    ) -> None:
        import h5py

        check_store_dtype(dtype, float16_overflow)
        self.dtype, self.float16_overflow = dtype, float16_overflow
        #: float16: values clipped to ±65504 so far (``float16_overflow="clip"``)
        self.n_clipped = 0
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path}: store exists; pass overwrite=True")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.sample_shape = tuple(int(s) for s in sample_shape)
        self._f = None
        self._ds: dict = {}
        try:
            check_free_space(self.path.parent, 0, what=self.path)
            self._f = h5py.File(
                self.tmp, "w", rdcc_nbytes=0
            )  # chunks go to disk at once: a full disk fails the write itself
            self._create(attrs, label_dtype, meta_columns, compression, patch_index)
            self._f.flush()
        except BaseException as exc:  # e.g. a full disk: leave no partial file behind
            if isinstance(exc, OSError) and is_disk_full(exc):
                raise self._full(exc) from None
            self.abort()
            raise

    def _create(self, attrs, label_dtype, meta_columns, compression, patch_index) -> None:
        f = self._open_file()
        f.attrs["format"] = FORMAT
        f.attrs["complete"] = False
        for k, v in (attrs or {}).items():
            f.attrs[k] = _encode(v)
        if self.dtype != "float32":  # a float32 store keeps the attributes (and bytes) it always had
            f.attrs["sample_dtype"] = self.dtype
        self.patch_index = None if patch_index is None else np.asarray(patch_index, dtype=np.int32)
        if self.patch_index is None:
            f.create_dataset(
                "patches",
                shape=(0, *self.sample_shape),
                maxshape=(None, *self.sample_shape),
                dtype=self.dtype,
                chunks=(1, *self.sample_shape),
                compression=compression,
            )
        else:
            if self.patch_index.shape != self.sample_shape[1:]:
                raise StoreError(
                    f"patch_index {self.patch_index.shape} does not match sample shape {self.sample_shape}"
                )
            n_vert = int(self.patch_index.max()) + 1
            f.attrs["layout"] = "frames"
            f.attrs["frames_per_sample"] = self.sample_shape[0]
            f.create_dataset("patch_index", data=self.patch_index)
            f.create_dataset(
                "frames",
                shape=(0, n_vert),
                maxshape=(None, n_vert),
                dtype=self.dtype,
                chunks=(1, n_vert),
                compression=compression,
            )
            f.create_dataset("sample_start", shape=(0,), maxshape=(None,), dtype="int64", chunks=(4096,))
        self.n_frames = 0
        f.create_dataset("labels", shape=(0,), maxshape=(None,), dtype=label_dtype, chunks=(4096,))
        g = f.create_group("meta")
        self.meta_columns = tuple(meta_columns)
        for c in self.meta_columns:
            g.create_dataset(c, shape=(0,), maxshape=(None,), dtype=_string_dtype(), chunks=(4096,))
        g.create_dataset("onset", shape=(0,), maxshape=(None,), dtype="float64", chunks=(4096,))
        self.n = 0
        # every dataset stays open while writing: a temporary handle closed after each statement would flush its
        # chunks from h5py's destructor, where a full disk is only printed and leaves HDF5 broken
        names = (
            "patches",
            "frames",
            "sample_start",
            "patch_index",
            "labels",
            *(f"meta/{c}" for c in (*self.meta_columns, "onset")),
        )
        self._ds = {n: f[n] for n in names if n in f}

    def append(
        self,
        patches: np.ndarray,
        labels: np.ndarray | None = None,
        *,
        onsets: np.ndarray | None = None,
        **meta: str | Sequence[str],
    ) -> None:
        """Append ``k`` samples. ``patches``: ``(k, *sample_shape)``; ``meta`` values: one string for
        all ``k`` samples or a sequence of ``k``. A float16 store converts them (:func:`store_values`: values beyond
        its range refused or clipped, as ``float16_overflow`` says)."""
        if self.patch_index is not None:
            raise StoreError(f"{self.path}: a frame-layout store takes append_frames + append_samples")
        patches = self._values(patches)
        if patches.shape[1:] != self.sample_shape:
            raise StoreError(
                f"{self.path}: sample shape {patches.shape[1:]} differs from the store's {self.sample_shape}"
            )
        k = patches.shape[0]
        if k == 0:
            return
        with self._writing(patches.nbytes):
            ds = self._ds["patches"]
            ds.resize(self.n + k, axis=0)
            ds[self.n : self.n + k] = patches
            self._append_rows(k, labels, onsets, meta)

    def append_frames(self, frames: np.ndarray) -> int:
        """Frame layout: append frames ``(k, n_template_vertices)``; returns the row of the first."""
        frames = self._values(frames)
        ds = self._ds["frames"]
        if frames.ndim != 2 or frames.shape[1] != ds.shape[1]:
            raise StoreError(f"{self.path}: frames {frames.shape}, expected (k, {ds.shape[1]})")
        row = self.n_frames
        with self._writing(frames.nbytes):
            ds.resize(row + len(frames), axis=0)
            ds[row:] = frames
        self.n_frames = row + len(frames)
        return row

    def append_samples(
        self,
        starts: np.ndarray,
        labels: np.ndarray | None = None,
        *,
        onsets: np.ndarray | None = None,
        **meta: str | Sequence[str],
    ) -> None:
        """Frame layout: append samples starting at rows ``starts`` of ``/frames`` (``tubelet`` frames each)."""
        starts = np.asarray(starts, dtype=np.int64)
        T = self.sample_shape[0]
        if len(starts) and (starts.min() < 0 or starts.max() + T > self.n_frames):
            raise StoreError(f"{self.path}: samples reach beyond the {self.n_frames} frames written")
        k = len(starts)
        if k == 0:
            return
        with self._writing(starts.nbytes):
            ds = self._ds["sample_start"]
            ds.resize(self.n + k, axis=0)
            ds[self.n : self.n + k] = starts
            self._append_rows(k, labels, onsets, meta)

    def _values(self, x: np.ndarray) -> np.ndarray:
        """``x`` in the store's dtype (float16: out-of-range values refused or clipped, counted)."""
        if self.dtype == "float32":
            return np.asarray(x, dtype=np.float32)
        v, n = store_values(x, self.dtype, overflow=self.float16_overflow, where=str(self.path))
        self.n_clipped += n
        return v

    def _append_rows(self, k: int, labels, onsets, meta: dict) -> None:
        lo, hi = self.n, self.n + k
        self._ds["labels"].resize(hi, axis=0)
        self._ds["labels"][lo:hi] = -1 if labels is None else np.asarray(labels)
        for c in self.meta_columns:
            v = meta.get(c, "")
            vals = [v] * k if isinstance(v, str) else list(v)
            if len(vals) != k:
                raise StoreError(f"meta column {c!r}: {len(vals)} values for {k} samples")
            ds = self._ds[f"meta/{c}"]
            ds.resize(hi, axis=0)
            ds[lo:hi] = vals
        ds = self._ds["meta/onset"]
        ds.resize(hi, axis=0)
        ds[lo:hi] = np.zeros(k) if onsets is None else np.asarray(onsets, dtype=np.float64)
        self.n = hi

    def mark(self) -> tuple[int, int]:
        """A point to :meth:`rollback` to (samples and frames written so far)."""
        return self.n, self.n_frames

    def rollback(self, mark: tuple[int, int]) -> None:
        """Drop what was appended after ``mark`` (e.g. the first hemisphere of a run whose second failed)."""
        n, n_frames = mark
        for name in ("patches", "labels", "sample_start", *(f"meta/{c}" for c in (*self.meta_columns, "onset"))):
            if name in self._ds:
                self._ds[name].resize(n, axis=0)
        if "frames" in self._ds:
            self._ds["frames"].resize(n_frames, axis=0)
        self.n, self.n_frames = n, n_frames

    def set_attrs(self, **attrs: Any) -> None:
        with self._writing(0):
            f = self._open_file()
            for k, v in attrs.items():
                f.attrs[k] = _encode(v)

    def _open_file(self) -> Any:
        """The open HDF5 file being written (``h5py.File``).

        Raises
        ------
        StoreError
            The writer was closed (:meth:`close`) or discarded (:meth:`abort`, a failed write).
        """
        if self._f is None:
            raise StoreError(
                f"{self.path}: the store writer is closed (after close(), abort() or a failed write); "
                "nothing more can be written to it"
            )
        return self._f

    @contextmanager
    def _writing(self, nbytes: int):
        """Guard one write of about ``nbytes``: free space is checked first and HDF5's buffers are flushed at
        the end, so that a full disk surfaces here (not later, in h5py's object destructors, where it is
        only printed and the file is left damaged); then the unfinished file is discarded
        (:class:`~neurokit._utils.errors.DiskFullError`)."""
        try:
            check_free_space(self.tmp.parent, nbytes, what=self.path)
            yield
            self._open_file().flush()
        except (OSError, RuntimeError) as exc:
            if not is_disk_full(exc):
                raise
            raise self._full(exc) from None

    def _full(self, exc: BaseException) -> DiskFullError:
        """Discard the unfinished file after a full disk; the error to raise."""
        self.abort()
        why = os.strerror(errno.ENOSPC)
        if isinstance(exc, DiskFullError):  # found before writing: its own words
            why = str(exc).removeprefix(f"{self.path}: disk full (").removesuffix(")")
        return DiskFullError(
            f"{self.path}: disk full while writing it ({why}); its unfinished file {self.tmp.name} "
            "was removed and nothing else was changed. Free space, then run the command again"
        )

    def close(self) -> Path:
        """Mark the store complete and move it into place. Returns the final path."""
        if self._f is None:
            return self.path
        if self.n == 0:
            self.abort()
            raise StoreError(f"{self.path}: no samples were written; the store was not created")
        with self._writing(0):
            if self.n_clipped:
                self._f.attrs["n_float16_clipped"] = self.n_clipped
            self._f.attrs["complete"] = True
            self._f.attrs["n_samples"] = self.n
        try:
            self._ds = {}
            self._f.close()
            self._f = None
            os.replace(self.tmp, self.path)
        except (OSError, RuntimeError) as exc:
            if not is_disk_full(exc):
                raise
            raise self._full(exc) from None
        return self.path

    def abort(self) -> None:
        """Discard the partial file (an existing complete store at ``path`` is left untouched). The file is
        first cut to zero bytes, so that HDF5's last writes on closing find room on a full disk (closing a file
        whose writes failed can otherwise crash the process)."""
        if self._f is not None:
            f, self._f = self._f, None
            try:
                os.ftruncate(f.id.get_vfd_handle(), 0)
            except Exception:  # not a plain file (a device), or the handle is gone: close it as it is
                pass
            try:
                f.close()
            except Exception:  # a full disk can fail the final flush too; the file is discarded anyway
                pass
            self._ds = {}
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> "PatchStoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


#: this thread's float16 read buffer (:func:`_staging`): one per thread, not one per store (a shard set has thousands)
_STAGE = threading.local()


def _staging(k: int, sample_shape: tuple[int, ...], dtype) -> np.ndarray:
    """A ``(k, *sample_shape)`` buffer of ``dtype`` (a float16 store's chunks as read), reused from batch to batch."""
    n = k * int(np.prod(sample_shape))
    buf = getattr(_STAGE, "buf", None)
    if buf is None or buf.dtype != dtype or buf.size < n:
        buf = _STAGE.buf = np.empty(n, dtype=dtype)
    return buf[:n].reshape(k, *sample_shape)


def _finite(x: np.ndarray) -> np.ndarray:
    """``np.isfinite(x)``; for float16 through its bits (exponent not all ones), about 30× numpy's float16
    ``isfinite`` (0.5 against 14 ms for a batch of 64 windows of 64 × 4 × 200 on the 2-core VM)."""
    if x.dtype == np.float16:
        return (x.view(np.uint16) & 0x7C00) != 0x7C00
    return np.isfinite(x)


def _widen(src: np.ndarray, out: np.ndarray, at: np.ndarray) -> None:
    """``out[at] = src[at]``, float16 → float32, through torch's vectorised conversion (about 15× numpy's on
    the 2-core VM: 0.8 against 11.8 ms for a batch of 64 windows of 64 × 4 × 200)."""
    import torch

    t_out, t_src = torch.from_numpy(out), torch.from_numpy(src)
    every = np.zeros(len(out), dtype=bool)
    every[at] = True
    if every.all():  # every row of ``out`` was read: one pass over the whole batch
        t_out.copy_(t_src)
    else:
        idx = torch.from_numpy(np.ascontiguousarray(at, dtype=np.int64))
        t_out.index_copy_(0, idx, t_src.index_select(0, idx).to(torch.float32))


class _OpenFiles:
    """The store files this process holds open, least recently read first; past ``limit`` the oldest is
    closed (it reopens on its next read). Each open HDF5 file keeps its own chunk cache (about 1 MiB per
    dataset) and a file descriptor, so a dataset over a shard set of thousands of recordings read in random
    order would otherwise grow with the number of shards."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lru: OrderedDict[int, weakref.ref] = OrderedDict()

    def touch(self, store: "PatchStore") -> None:
        key = id(store)
        self._lru[key] = weakref.ref(store)
        self._lru.move_to_end(key)
        while len(self._lru) > self.limit:
            st = self._lru.popitem(last=False)[1]()
            if st is not None:
                st.close()


#: at most this many store files open at once per process (DataLoader workers count apart)
OPEN_FILES = _OpenFiles(32)


#: a store of at most this many values is scanned for NaN/inf when opened (about 256 MB of float32)
FINITE_SCAN_VALUES = 64_000_000
#: what to do about a store's NaN/inf samples (every message that finds them says it)
NONFINITE_REMEDY = "rerun prepare (which refuses a recording with NaN/inf, naming its channels)"
#: what the scan found, by the scanned file's identity (device, inode, size, mtime): an edited file is scanned again
_NONFINITE: dict[tuple[int, int, int, int], np.ndarray] = {}
#: the files whose whole-number float labels were said to be read as classes (once per file as it is on disk)
_CLASS_LABELS_SAID: set[tuple[int, int, int, int]] = set()


class PatchStore:
    """Read-only view of one complete patch store.

    Attributes
    ----------
    info : StoreMeta
        The store's metadata, typed.
    attrs : dict
        The same attributes, decoded but untyped (for callers not yet on :attr:`info`).
    labels : ndarray, shape (n_samples,)
        int64 class indices (-1: none) or float32 targets.
    meta : dict of str to ndarray
        Per-sample columns (``subject``, ``session``, ``run``, ``onset`` in s, …).
    sample_shape : tuple of int
        EEG ``(C, N, 200)``; surface ``(T, n_patches, V)``.

    Parameters
    ----------
    path : str or Path
        The store file.
    validate : bool
        Check the store when opening it (:meth:`problems`; default). ``False`` only for prepare's own
        intermediate files.

    Raises
    ------
    StoreError
        The file is not a neurokit store, or it was never completed.
    """

    def __init__(self, path: str | Path, *, validate: bool = True) -> None:
        import h5py

        self.path = Path(path)
        #: the file as an absolute path, fixed when opened: a later ``os.chdir`` does not change which file it reads
        self._file_path = self.path.absolute()
        if self.path.is_dir():
            raise StoreError(f"{self.path}: a folder; a shard set is read through open_stores / PatchDataset")
        if not self.path.exists():
            partial = self.path.with_name(self.path.name + ".partial")
            hint = f" (an unfinished {partial.name} is there: rerun prepare)" if partial.exists() else ""
            raise FileNotFoundError(f"{self.path}: no such store{hint}")
        try:
            with h5py.File(self._file_path, "r") as f:
                #: the file this store read at opening (device, inode, size, mtime); every reopening (a
                #: DataLoader worker, a later epoch) must find the same one (:meth:`_file`)
                self.identity = _identity(f, self._file_path)
                attrs = {k: _decode(v) for k, v in f.attrs.items()}
                info = StoreMeta.from_attrs(attrs, where=str(self.path))
                #: the dtype the samples are stored in (the HDF5 dataset's: the record), ``"float32"`` or
                #: ``"float16"``; every read returns float32
                self.sample_dtype = str(f["frames" if info.frame_layout else "patches"].dtype)
                if info.frame_layout:
                    self._starts = f["sample_start"][:]
                    self._patch_index = f["patch_index"][:]
                    self.n_samples = len(self._starts)
                    if info.frames_per_sample is None:
                        raise StoreError(
                            f"{self.path}: a frames-layout store without its 'frames_per_sample' "
                            "attribute; rerun prepare"
                        )
                    self.sample_shape = (int(info.frames_per_sample), *self._patch_index.shape)
                else:
                    self._starts = self._patch_index = None
                    self.n_samples = int(f["patches"].shape[0])
                    self.sample_shape = tuple(f["patches"].shape[1:])
                self.labels = f["labels"][:]
                self.meta = {k: _read_column(f["meta"][k]) for k in f["meta"]}
        except (OSError, KeyError) as exc:
            raise StoreError(f"{self.path}: not a readable neurokit patch store ({exc})") from exc
        if info.format != FORMAT:
            raise StoreError(f"{self.path}: format {info.format!r}, expected {FORMAT!r}")
        if not info.complete:
            raise StoreError(f"{self.path}: incomplete store (prepare did not finish); rerun prepare")
        #: the attributes as decoded from the file (untyped; kept for callers not yet on :attr:`info`)
        self.attrs = attrs
        #: the same, typed (:class:`StoreMeta`)
        self.info = info
        self._h5 = None
        self._h5_pid = os.getpid()
        self._pds: Any = None  # this process's open 'patches' dataset (:meth:`_patches_dataset`)
        self._direct = False  # its chunks are whole unfiltered float32 windows: read chunk by chunk
        #: rows per read-ahead block (0: none): :meth:`read_into` asks the kernel to read each aligned block of this
        #: many rows it touches as a whole (``posix_fadvise(POSIX_FADV_WILLNEED)``), once per block in a while
        self.readahead = 0
        #: ask for a block on its first read too (off when the sampler asks for the blocks ahead: make_loader)
        self.advise_on_read = True
        self._advised: OrderedDict[int, None] = OrderedDict()
        self._read_class_labels()
        problems = self.problems() if validate else []
        if problems:
            raise StoreError("\n".join(f"{self.path}: {p}" for p in problems))

    def _read_class_labels(self) -> None:
        """Float labels of a store that lists classes (labels re-saved as float 0.0/1.0 by another tool) are read as
        class indices when every one is a whole number (NaN: unlabelled, -1), said once per file; other float labels
        stay as they are (:meth:`problems` refuses them)."""
        names = self.info.label_names
        y = self.labels
        if not names or y.dtype.kind != "f" or len(y) != self.n_samples or np.isinf(y).any():
            return
        known = ~np.isnan(y)
        if (y[known] != np.round(y[known])).any():
            return
        self.labels = np.where(known, y, -1).astype(np.int64)
        if self.identity not in _CLASS_LABELS_SAID:
            _CLASS_LABELS_SAID.add(self.identity)
            logger.warning(
                "%s: labels stored as %s numbers though it lists %d classes (%s); read as class indices",
                self.path,
                y.dtype,
                len(names),
                ", ".join(names),
            )

    def problems(self, max_scan_values: int | None = None) -> list[str]:
        """What makes this store unusable, one sentence each (empty when it is sound): labels and metadata of
        another length than the samples, a missing ``meta/subject``, channel names of another count than the
        samples' channels, labels outside ``label_names``, and non-finite samples (named by window; scanned when
        the store holds at most ``max_scan_values`` values, else found when read by :meth:`patches`). A store
        edited or written by another tool is caught when it is opened, by every command that reads it.

        Examples
        --------
        >>> PatchStore("runs/mi.h5").problems()  # doctest: +SKIP
        []
        """
        n = self.n_samples
        out = []
        if len(self.labels) != n:
            out.append(f"'labels' holds {len(self.labels)} values for {n} samples; rerun prepare")
        for k, v in self.meta.items():
            if len(v) != n:
                out.append(f"'meta/{k}' holds {len(v)} values for {n} samples; rerun prepare")
        missing = [c for c in REQUIRED_META if c not in self.meta]
        if missing:
            out.append(
                f"no {', '.join(repr('meta/' + c) for c in missing)} column{'s' if len(missing) > 1 else ''} (a store "
                f"has the columns {', '.join('meta/' + c for c in REQUIRED_META)}: splits, leak checks and reports "
                "read them); rerun prepare"
            )
        if self.sample_dtype != self.info.sample_dtype:
            out.append(
                f"samples stored as {self.sample_dtype} where its sample_dtype attribute says {self.info.sample_dtype}; "
                "rerun prepare"
            )
        ch = self.info.ch_names
        if self.modality == "eeg" and ch is not None and len(ch) != self.sample_shape[0]:
            out.append(
                f"{len(ch)} channel names (ch_names) for samples of {self.sample_shape[0]} channels "
                f"{tuple(self.sample_shape)}; rerun prepare"
            )
        ps = self.info.patch_size
        if self.modality == "eeg" and ps and self.sample_shape[-1] != ps:
            out.append(
                f"patches of {self.sample_shape[-1]} samples where the store says patch_size {ps}; rerun prepare"
            )
        names = list(self.info.label_names or ())
        if self.labels.dtype.kind == "f" and np.isinf(self.labels).any():
            inf = np.flatnonzero(np.isinf(self.labels))
            out.append(
                f"{len(inf)} infinite label(s) (e.g. sample(s) {', '.join(map(str, inf[:5]))}); a target is a finite "
                "number (NaN marks an unlabelled sample): rerun prepare"
            )
        if names and self.labels.dtype.kind == "f" and len(self.labels) == n:
            y = self.labels[np.isfinite(self.labels)]
            if (y != np.round(y)).any():
                out.append(
                    f"labels that are not whole numbers ({', '.join(f'{v:g}' for v in np.unique(y[y != np.round(y)])[:5])}) "
                    f"though it lists {len(names)} classes ({', '.join(names)}); rerun prepare"
                )
        if names and self.labels.dtype.kind in "iu":  # whatever their count: every problem is said at once
            bad = np.flatnonzero((self.labels < -1) | (self.labels >= len(names)))
            if len(bad):
                vals = sorted({int(v) for v in self.labels[bad]})
                out.append(
                    f"labels {vals} outside its {len(names)} classes ({', '.join(names)}; -1 = unlabelled) in "
                    f"{len(bad)} sample(s), e.g. {', '.join(map(str, bad[:5]))}"
                )
        limit = FINITE_SCAN_VALUES if max_scan_values is None else max_scan_values
        if self._values() <= limit:
            bad_windows = self._nonfinite_windows()
            if len(bad_windows):
                out.append(
                    f"{len(bad_windows)} sample(s) hold NaN or inf values (e.g. {', '.join(map(str, bad_windows[:5]))}); "
                    + NONFINITE_REMEDY
                )
        return out

    def _values(self) -> int:
        return int(self.n_samples * int(np.prod(self.sample_shape)))

    def _nonfinite_windows(self) -> np.ndarray:
        """Samples holding a NaN or inf value, read in blocks; once per file as it is on disk (a pipeline opens
        one store several times: :data:`_NONFINITE` remembers the answer by the file's identity)."""
        known = _NONFINITE.get(self.identity)
        if known is None:
            known = _NONFINITE[self.identity] = self._scan_nonfinite()
        return known

    def _scan_nonfinite(self) -> np.ndarray:
        import h5py

        bad = []
        with h5py.File(self._file_path, "r") as f:
            if self._starts is None:
                d = f["patches"]
                step = max(1, (1 << 22) // max(1, int(np.prod(d.shape[1:]))))
                for lo in range(0, d.shape[0], step):
                    x = d[lo : lo + step]
                    ok = np.isfinite(x.reshape(len(x), -1)).all(axis=1)
                    bad += (lo + np.flatnonzero(~ok)).tolist()
            else:
                fr = np.isfinite(f["frames"][:]).all(axis=1)  # frames (n_frames, vertices)
                T = self.sample_shape[0]
                bad = [i for i, st in enumerate(self._starts) if not fr[int(st) : int(st) + T].all()]
        return np.asarray(bad, dtype=np.int64)

    def __len__(self) -> int:
        return self.n_samples

    @property
    def modality(self) -> str:
        return self.info.modality

    def _file(self):
        import h5py

        if self._h5 is not None and self._h5_pid != os.getpid():
            # a forked DataLoader worker inherited the parent's handle: HDF5 handles are not fork-safe, and the
            # path must be checked again (the store may have been replaced since the parent opened it); the
            # inherited objects are dropped (the dataset first) before this process opens its own
            self._pds = None
            self._h5 = None
        if self._h5 is None:
            try:
                f = h5py.File(self._file_path, "r")
            except FileNotFoundError:
                raise StoreError(
                    f"{self.path}: the store this run opened was removed from disk during the run; "
                    "a run reads the store it started with: restore it, or start the run again"
                ) from None
            now = _identity(f, self._file_path)
            if now != self.identity:
                f.close()
                raise StoreError(
                    f"{self.path}: the store was replaced or changed on disk during the run (opened as "
                    f"{_identity_text(self.identity)}, now {_identity_text(now)}); a run reads the store it "
                    "started with: start the run again on the new store"
                )
            self._h5, self._h5_pid = f, os.getpid()
        OPEN_FILES.touch(self)
        return self._h5

    def patches(self, idx) -> np.ndarray:
        """Patch tensor(s) at ``idx`` as float32: an int (one sample), a slice, or a 1-D sequence of sample
        numbers in any order (repeats allowed; read as :meth:`read_into` does).

        Raises
        ------
        StoreError
            A sample holds NaN or inf (a store too large to scan when opened: :meth:`problems`).
        IndexError
            A sample number outside the store.
        """
        if isinstance(idx, (int, np.integer)):
            out = np.empty((1, *self.sample_shape), dtype=np.float32)
            self.read_into(np.asarray([idx]), out)
            return out[0]
        if not isinstance(idx, slice):
            rows = np.asarray(idx)
            if rows.ndim == 1 and (rows.dtype.kind in "iu" or len(rows) == 0):
                out = np.empty((len(rows), *self.sample_shape), dtype=np.float32)
                self.read_into(rows.astype(np.int64, copy=False), out)
                return out
        x = self._patches(idx)
        if self._values() > FINITE_SCAN_VALUES and not np.isfinite(x).all():
            raise StoreError(f"{self.path}: sample(s) in this batch hold NaN or inf values; {NONFINITE_REMEDY}")
        return x

    def read_into(self, rows: np.ndarray, out: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
        """Read samples ``rows`` into ``out[at]`` (default ``out[:len(rows)]``) without a copy in between.

        The rows are read in increasing order, whatever their order in ``rows``, each sample into its place.
        When the store's chunks are whole windows without a filter (what :class:`PatchStoreWriter` writes
        by default) each is read straight from its chunk into ``out`` (``read_direct_chunk``: no chunk
        cache, no selection); other layouts (a compressed store, other chunk shapes, the frame layout) go
        through HDF5's selections, consecutive rows in one read. Stores of every chunking read alike. A float16
        store's chunks are read as stored into a reused float16 buffer laid out as ``out`` and converted into
        ``out`` in one pass (torch's vectorised conversion).

        Parameters
        ----------
        rows : ndarray of int, shape (k,)
            Sample numbers (negative ones count from the end; repeats allowed).
        out : ndarray of float32 (or float16 for a float16 store), C-contiguous, shape (m, C, N, P)
            Destination, ``m`` samples of the store's sample shape (e.g. the numpy view of a batch tensor in
            shared memory). A float16 ``out`` of a float16 store receives the stored values as they are (no
            conversion: the "stored" batches of :class:`~neurokit.data.dataset.PatchDataset`).
        at : ndarray of int, shape (k,), optional
            Row of ``out`` for each of ``rows``.

        Returns
        -------
        out : ndarray
            ``out``, filled.

        Raises
        ------
        IndexError
            A row outside the store.
        ValueError
            ``out`` not C-contiguous float32 (or float16 from a float16 store) of the store's sample shape.
        StoreError
            A sample holds NaN or inf (a store too large to scan when opened: :meth:`problems`).

        Examples
        --------
        >>> out = np.empty((2, *st.sample_shape), dtype=np.float32)  # doctest: +SKIP
        >>> st.read_into(np.array([7, 3]), out)  # out[0] = sample 7, out[1] = sample 3  # doctest: +SKIP
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        at = np.arange(len(rows), dtype=np.int64) if at is None else np.asarray(at, dtype=np.int64).reshape(-1)
        ok_dtype = out.dtype == np.float32 or (out.dtype == np.float16 and self.sample_dtype == "float16")
        if not ok_dtype or not out.flags.c_contiguous or tuple(out.shape[1:]) != self.sample_shape:
            also = " (or float16, for a float16 store)" if out.dtype == np.float16 else ""
            raise ValueError(
                f"read_into: out must be C-contiguous float32{also} of shape "
                f"(k, {', '.join(map(str, self.sample_shape))}); got {out.dtype} {out.shape} from a "
                f"{self.sample_dtype} store"
            )
        if len(at) != len(rows) or (len(at) and (at.min() < 0 or at.max() >= len(out))):
            raise ValueError(f"read_into: {len(rows)} rows into {len(at)} places of an output of {len(out)}")
        if len(rows) == 0:
            return out
        rows = np.where(rows < 0, rows + self.n_samples, rows)
        if rows.min() < 0 or rows.max() >= self.n_samples:
            bad = rows[(rows < 0) | (rows >= self.n_samples)]
            raise IndexError(f"{self.path}: sample {int(bad[0])} outside the store's {self.n_samples}")
        order = np.argsort(rows, kind="stable")
        rows, at = rows[order], at[order]
        if self.readahead > 0 and self.advise_on_read and self._starts is None:
            self._read_ahead(rows)
        if self._starts is not None:
            frames, T = self._file()["frames"], self.sample_shape[0]
            for r, k in zip(rows.tolist(), at.tolist()):
                s = int(self._starts[r])
                out[k] = frames[s : s + T][:, self._patch_index]
        else:
            d = self._patches_dataset()
            if self._direct:
                self._read_chunks(d, rows, at, out)
            else:
                self._read_runs(d, rows, at, out)
        if self._values() > FINITE_SCAN_VALUES and not (len(at) == len(out) and _finite(out).all()):
            ok = _finite(out.reshape(len(out), -1)[at]).all(axis=1)
            if not ok.all():
                raise StoreError(
                    f"{self.path}: sample(s) {', '.join(map(str, rows[~ok][:5].tolist()))} hold NaN or inf values; "
                    + NONFINITE_REMEDY
                )
        return out

    def _patches_dataset(self):
        """This process's ``patches`` dataset, opened once per file opening. One window per chunk: the chunk cache
        is off (each chunk is read once per window read; through the cache it would be copied twice)."""
        f = self._file()
        if self._pds is None:
            import h5py

            d = f["patches"]
            if d.chunks is not None and d.chunks[0] == 1:
                dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
                dapl.set_chunk_cache(521, 0, 1.0)
                d = h5py.Dataset(h5py.h5d.open(f.id, b"patches", dapl))
            self._direct = bool(
                d.chunks == (1, *self.sample_shape)
                and d.id.get_create_plist().get_nfilters() == 0
                and d.dtype in (np.dtype(np.float32), np.dtype(np.float16))
            )
            self._pds = d
        return self._pds

    def will_need(self, rows: np.ndarray) -> None:
        """Ask the kernel to read the :attr:`readahead` blocks holding ``rows`` (sorted sample numbers) into the page
        cache in the background (nothing when :attr:`readahead` is 0 or the layout is the frame one).

        Parameters
        ----------
        rows : ndarray of int, shape (k,)
            Samples that will be read soon, in increasing order.
        """
        if self.readahead > 0 and self._starts is None and len(rows):
            self._read_ahead(np.asarray(rows, dtype=np.int64), background=True)

    def _read_ahead(self, rows: np.ndarray, background: bool = False) -> None:
        """Ask the kernel to read each not-yet-advised block of :attr:`readahead` rows touched by ``rows`` as one
        range of the file: in a block order (:class:`~neurokit.training.optim.EpochSampler`) the first window read
        from a block brings the whole block into the page cache in large reads, and its other windows, read in
        later batches, come from memory. Nothing happens where the kernel cannot tell (no POSIX, other drivers)."""
        if not hasattr(os, "posix_fadvise"):
            return
        d = self._patches_dataset()
        ra = self.readahead
        if ra <= 0:
            return
        for b in np.unique(rows // ra).tolist():
            if b in self._advised:
                self._advised.move_to_end(b)
                continue
            self._advised[b] = None
            while len(self._advised) > 64:  # blocks recently advised (a block is read within a few batches)
                self._advised.popitem(last=False)
            span = _byte_span(d, b * ra, min((b + 1) * ra, self.n_samples) - 1)
            if span is None:
                self.readahead = 0  # a layout whose bytes cannot be located: stop asking
                return
            try:
                fd = self._file().id.get_vfd_handle()
            except (OSError, ValueError, TypeError, AttributeError):
                self.readahead = 0
                return
            _will_need(fd, span[0], span[1], background)

    def _read_chunks(self, d, rows: np.ndarray, at: np.ndarray, out: np.ndarray) -> None:
        """Each row's chunk (a whole unfiltered window) straight into ``out[at]``; a float16 store's chunks into one
        float16 buffer, converted into a float32 ``out[at]`` in one pass (straight into a float16 ``out``)."""
        # float16: each chunk's bytes as stored into a buffer laid out as ``out``, then one conversion (no HDF5 type
        # conversion per chunk)
        dest = out if d.dtype == out.dtype else _staging(len(out), self.sample_shape, d.dtype)
        flat = dest.reshape(len(dest), -1).view(np.uint8)
        read, tail = d.id.read_direct_chunk, (0,) * (d.ndim - 1)
        for r, k in zip(rows.tolist(), at.tolist()):
            try:
                read((r, *tail), out=flat[k])
            except Exception:  # a chunk never written (reads as the fill value), an h5py without `out`
                d.read_direct(dest, np.s_[r : r + 1], np.s_[k : k + 1])
        if dest is not out:
            _widen(dest, out, at)

    @staticmethod
    def _read_runs(d, rows: np.ndarray, at: np.ndarray, out: np.ndarray) -> None:
        """Rows through HDF5 selections: each run of consecutive rows bound for consecutive places in one read."""
        cut = np.flatnonzero((np.diff(rows) != 1) | (np.diff(at) != 1)) + 1
        for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), len(rows)]):
            r, k, n = int(rows[lo]), int(at[lo]), hi - lo
            d.read_direct(out, np.s_[r : r + n], np.s_[k : k + n])

    def _patches(self, idx) -> np.ndarray:
        if self._starts is None:
            return np.asarray(self._patches_dataset()[idx], dtype=np.float32)
        frames, T = self._file()["frames"], self.sample_shape[0]
        if isinstance(idx, (int, np.integer)):
            s = int(self._starts[idx])
            return np.asarray(frames[s : s + T][:, self._patch_index], dtype=np.float32)
        return np.stack([frames[s : s + T][:, self._patch_index] for s in self._starts[idx]]).astype(
            np.float32, copy=False
        )

    def close(self) -> None:
        self._pds = None
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __getstate__(self):  # DataLoader workers reopen the file themselves
        d = dict(self.__dict__)
        d["_h5"] = d["_pds"] = None
        d["_advised"] = OrderedDict()
        return d

    def __repr__(self) -> str:
        return f"PatchStore({str(self.path)!r}, n={self.n_samples}, sample_shape={self.sample_shape}, modality={self.modality!r})"


def is_store_file(path: str | Path) -> bool:
    """Whether ``path`` is an HDF5 file written by neurokit's store writer (complete or not): what ``prepare``'s
    ``overwrite`` may replace. Any other file (a user's text, an HDF5 file of another program) is not.

    Parameters
    ----------
    path : str or Path
        Any path (a missing file or a folder gives ``False``).

    Returns
    -------
    bool

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "notes.h5"; _ = p.write_text("my notes")
    >>> is_store_file(p)
    False
    """
    import h5py

    path = Path(path)
    try:
        if not path.is_file() or not h5py.is_hdf5(path):
            return False
        with h5py.File(path, "r") as f:
            return "format" in f.attrs
    except OSError:
        return False


#: bytes per read-ahead request where the device's limit is unknown: the kernel reads at most
#: ``max(read_ahead_kb, max_sectors_kb)`` per ``POSIX_FADV_WILLNEED`` (:func:`_advice_piece`), so a block is asked
#: for in pieces
WILL_NEED_PIECE = 1 << 20
#: bytes per read-ahead request, by device number (:func:`_advice_piece`)
_PIECE: dict[int, int] = {}
#: this process's background read-ahead requests (file descriptor, start, end), and its thread, by process id
_ADVICE: dict[int, Any] = {}


def _will_need(fd: int, start: int, end: int, background: bool) -> None:
    """``POSIX_FADV_WILLNEED`` over bytes ``start:end`` of ``fd`` in :func:`_advice_piece` pieces; ``background``:
    by a thread of this process (the kernel may block the caller while its request queue is full)."""
    if background:
        import queue
        import threading

        q = _ADVICE.get(os.getpid())
        if q is None:
            _ADVICE.clear()  # a forked process's inherited queue has no thread
            q = _ADVICE[os.getpid()] = queue.SimpleQueue()
            threading.Thread(target=_advise_loop, args=(q,), name="neurokit-readahead", daemon=True).start()
        q.put((fd, start, end))
        return
    _advise(fd, start, end)


def _advice_piece(fd: int) -> int:
    """Bytes the kernel reads whole per ``POSIX_FADV_WILLNEED`` on ``fd``'s device: the larger of its read-ahead
    size and its largest request (``/sys/dev/block/MAJ:MIN/queue``, the whole disk's for a partition), within
    128 kB-32 MB; :data:`WILL_NEED_PIECE` where the device does not say (a network file system, no sysfs)."""
    try:
        dev = os.fstat(fd).st_dev
    except OSError:
        return WILL_NEED_PIECE
    if dev not in _PIECE:
        piece = WILL_NEED_PIECE
        base = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        for q in (base / "queue", base / ".." / "queue"):
            try:
                kb = max(int((q / "read_ahead_kb").read_text()), int((q / "max_sectors_kb").read_text()))
            except (OSError, ValueError):
                continue
            piece = min(max(kb << 10, 128 << 10), 32 << 20)
            break
        _PIECE[dev] = piece
    return _PIECE[dev]


def _advise(fd: int, start: int, end: int) -> None:
    piece = _advice_piece(fd)
    for off in range(start, end, piece):
        try:
            os.posix_fadvise(fd, off, min(piece, end - off), os.POSIX_FADV_WILLNEED)
        except OSError:  # the file was closed meanwhile (a background request): nothing to read ahead
            return


def _advise_loop(q: Any) -> None:
    while True:
        _advise(*q.get())


def _byte_span(d, first: int, last: int) -> tuple[int, int] | None:
    """The bytes of the file that hold rows ``first..last`` of dataset ``d`` (a chunked dataset whose chunks span
    its other axes, or a contiguous one), as ``(start, end)``; ``None`` when they cannot be located."""
    try:
        if d.chunks is None:
            base = d.id.get_offset()
            if base is None:
                return None
            row = int(np.prod(d.shape[1:])) * d.dtype.itemsize
            return int(base) + first * row, int(base) + (last + 1) * row
        if tuple(d.chunks[1:]) != tuple(d.shape[1:]):
            return None
        c = d.chunks[0]
        lo = d.id.get_chunk_info_by_coord((first // c * c, *(0,) * (d.ndim - 1)))
        hi = d.id.get_chunk_info_by_coord((last // c * c, *(0,) * (d.ndim - 1)))
        if lo.byte_offset is None or hi.byte_offset is None:
            return None
        a, b = int(lo.byte_offset), int(hi.byte_offset) + int(hi.size)
        return (a, b) if b > a else None  # chunks not in row order: no one range
    except (AttributeError, RuntimeError, ValueError, KeyError, TypeError):
        return None


def _identity(f, path: Path) -> tuple[int, int, int, int]:
    """``(device, inode, size, mtime_ns)`` of the file an open h5py file ``f`` reads (its descriptor when
    the driver gives one, else the path)."""
    try:
        st = os.fstat(f.id.get_vfd_handle())
    except Exception:  # a driver without a file descriptor
        st = os.stat(path)
    return (int(st.st_dev), int(st.st_ino), int(st.st_size), int(st.st_mtime_ns))


def _identity_text(ident: tuple[int, int, int, int]) -> str:
    import datetime as _dt

    when = _dt.datetime.fromtimestamp(ident[3] / 1e9, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"inode {ident[1]}, {ident[2]} bytes, modified {when}"


def _read_column(ds) -> np.ndarray:
    data = ds[:]
    if data.dtype.kind == "O":  # fixed-width unicode: no Python object per sample
        return ds.asstr()[:].astype(str) if len(data) else np.zeros(0, dtype="U1")
    return data
