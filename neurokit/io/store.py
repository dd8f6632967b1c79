"""HDF5 patch stores: one file of patch tensors, labels and per-sample ids, with their provenance.

Layout (h5py)::

    /patches   (n_samples, *sample_shape) float32, chunked one sample per chunk
               EEG: (n, C, N, 200); surface fMRI: (n, F, N, V)
    /labels    (n_samples,) int64 class index (-1 = none) or float32 target
    /meta/<k>  (n_samples,) per-sample columns: subject, session, run (strings), onset (s), …
    or, in the frame layout (``layout="frames"``: surface fMRI, overlapping tubelets), each frame stored once:
    /frames        (n_frames, n_template_vertices) float32, one frame per chunk
    /patch_index   (n_patches, V) int32: template vertex of each patch position
    /sample_start  (n_samples,) int64: first row of /frames of each sample; a sample is the ``tubelet``
                   frames from there, cut into patches when read: ``frames[s:s+T][:, patch_index]``
    attrs      format, modality, complete, plus what the writer is given: ch_names, sfreq, recipe,
               card, sources (path + SHA-256), label_names, … (JSON-encoded where not scalar)

A store is written to ``<name>.partial`` and renamed into place only after ``complete=True`` is set, so a
``prepare`` that fails or is killed never leaves a file that reads as complete.
"""
from __future__ import annotations

import json
import os
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from neurokit._utils.errors import StoreError

FORMAT = "neurokit-patch-store/1"
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
    ) -> None:
        import h5py

        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path}: store exists; pass overwrite=True (CLI: --overwrite)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(self.path.name + ".partial")
        self.sample_shape = tuple(int(s) for s in sample_shape)
        self._f = None
        try:
            self._f = h5py.File(self.tmp, "w")
            self._create(attrs, label_dtype, meta_columns, compression, patch_index)
        except BaseException:  # e.g. a full disk: leave no partial file behind
            self.abort()
            raise

    def _create(self, attrs, label_dtype, meta_columns, compression, patch_index) -> None:
        f = self._f
        f.attrs["format"] = FORMAT
        f.attrs["complete"] = False
        for k, v in (attrs or {}).items():
            f.attrs[k] = _encode(v)
        self.patch_index = None if patch_index is None else np.asarray(patch_index, dtype=np.int32)
        if self.patch_index is None:
            f.create_dataset(
                "patches",
                shape=(0, *self.sample_shape),
                maxshape=(None, *self.sample_shape),
                dtype="float32",
                chunks=(1, *self.sample_shape),
                compression=compression,
            )
        else:
            if self.patch_index.shape != self.sample_shape[1:]:
                raise StoreError(f"patch_index {self.patch_index.shape} does not match sample shape {self.sample_shape}")
            n_vert = int(self.patch_index.max()) + 1
            f.attrs["layout"] = "frames"
            f.attrs["frames_per_sample"] = self.sample_shape[0]
            f.create_dataset("patch_index", data=self.patch_index)
            f.create_dataset("frames", shape=(0, n_vert), maxshape=(None, n_vert), dtype="float32",
                             chunks=(1, n_vert), compression=compression)
            f.create_dataset("sample_start", shape=(0,), maxshape=(None,), dtype="int64", chunks=(4096,))
        self.n_frames = 0
        f.create_dataset("labels", shape=(0,), maxshape=(None,), dtype=label_dtype, chunks=(4096,))
        g = f.create_group("meta")
        self.meta_columns = tuple(meta_columns)
        for c in self.meta_columns:
            g.create_dataset(c, shape=(0,), maxshape=(None,), dtype=_string_dtype(), chunks=(4096,))
        g.create_dataset("onset", shape=(0,), maxshape=(None,), dtype="float64", chunks=(4096,))
        self.n = 0

    def append(
        self,
        patches: np.ndarray,
        labels: np.ndarray | None = None,
        *,
        onsets: np.ndarray | None = None,
        **meta: str | Sequence[str],
    ) -> None:
        """Append ``k`` samples. ``patches``: ``(k, *sample_shape)``; ``meta`` values: one string for
        all ``k`` samples or a sequence of ``k``."""
        if self.patch_index is not None:
            raise StoreError(f"{self.path}: a frame-layout store takes append_frames + append_samples")
        patches = np.asarray(patches, dtype=np.float32)
        if patches.shape[1:] != self.sample_shape:
            raise StoreError(
                f"{self.path}: sample shape {patches.shape[1:]} differs from the store's {self.sample_shape}"
            )
        k = patches.shape[0]
        if k == 0:
            return
        ds = self._f["patches"]
        ds.resize(self.n + k, axis=0)
        ds[self.n : self.n + k] = patches
        self._append_rows(k, labels, onsets, meta)

    def append_frames(self, frames: np.ndarray) -> int:
        """Frame layout: append frames ``(k, n_template_vertices)``; returns the row of the first."""
        frames = np.asarray(frames, dtype=np.float32)
        ds = self._f["frames"]
        if frames.ndim != 2 or frames.shape[1] != ds.shape[1]:
            raise StoreError(f"{self.path}: frames {frames.shape}, expected (k, {ds.shape[1]})")
        row = self.n_frames
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
        ds = self._f["sample_start"]
        ds.resize(self.n + k, axis=0)
        ds[self.n : self.n + k] = starts
        self._append_rows(k, labels, onsets, meta)

    def _append_rows(self, k: int, labels, onsets, meta: dict) -> None:
        f = self._f
        lo, hi = self.n, self.n + k
        f["labels"].resize(hi, axis=0)
        f["labels"][lo:hi] = -1 if labels is None else np.asarray(labels)
        for c in self.meta_columns:
            v = meta.get(c, "")
            vals = [v] * k if isinstance(v, str) else list(v)
            if len(vals) != k:
                raise StoreError(f"meta column {c!r}: {len(vals)} values for {k} samples")
            ds = f["meta"][c]
            ds.resize(hi, axis=0)
            ds[lo:hi] = vals
        ds = f["meta"]["onset"]
        ds.resize(hi, axis=0)
        ds[lo:hi] = np.zeros(k) if onsets is None else np.asarray(onsets, dtype=np.float64)
        self.n = hi

    def mark(self) -> tuple[int, int]:
        """A point to :meth:`rollback` to (samples and frames written so far)."""
        return self.n, self.n_frames

    def rollback(self, mark: tuple[int, int]) -> None:
        """Drop what was appended after ``mark`` (e.g. the first hemisphere of a run whose second failed)."""
        n, n_frames = mark
        f = self._f
        for name in ("patches", "labels", "sample_start", *(f"meta/{c}" for c in (*self.meta_columns, "onset"))):
            if name in f:
                f[name].resize(n, axis=0)
        if "frames" in f:
            f["frames"].resize(n_frames, axis=0)
        self.n, self.n_frames = n, n_frames

    def set_attrs(self, **attrs: Any) -> None:
        for k, v in attrs.items():
            self._f.attrs[k] = _encode(v)

    def close(self) -> Path:
        """Mark the store complete and move it into place. Returns the final path."""
        if self._f is None:
            return self.path
        if self.n == 0:
            self.abort()
            raise StoreError(f"{self.path}: no samples were written; the store was not created")
        self._f.attrs["complete"] = True
        self._f.attrs["n_samples"] = self.n
        self._f.close()
        self._f = None
        os.replace(self.tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Discard the partial file (an existing complete store at ``path`` is left untouched)."""
        if self._f is not None:
            f, self._f = self._f, None
            try:
                f.close()
            except OSError:  # a full disk can fail the final flush too; the file is discarded anyway
                pass
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> "PatchStoreWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


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


class PatchStore:
    """Read-only view of one complete patch store.

    Raises
    ------
    StoreError
        The file is not a neurokit store, or it was never completed.
    """

    def __init__(self, path: str | Path) -> None:
        import h5py

        self.path = Path(path)
        if self.path.is_dir():
            raise StoreError(f"{self.path}: a folder; a shard set is read through open_stores / PatchDataset")
        if not self.path.exists():
            partial = self.path.with_name(self.path.name + ".partial")
            hint = f" (an unfinished {partial.name} is there: rerun prepare)" if partial.exists() else ""
            raise FileNotFoundError(f"{self.path}: no such store{hint}")
        try:
            with h5py.File(self.path, "r") as f:
                attrs = {k: _decode(v) for k, v in f.attrs.items()}
                if attrs.get("layout") == "frames":
                    self._starts = f["sample_start"][:]
                    self._patch_index = f["patch_index"][:]
                    self.n_samples = len(self._starts)
                    self.sample_shape = (int(attrs["frames_per_sample"]), *self._patch_index.shape)
                else:
                    self._starts = self._patch_index = None
                    self.n_samples = int(f["patches"].shape[0])
                    self.sample_shape = tuple(f["patches"].shape[1:])
                self.labels = f["labels"][:]
                self.meta = {k: _read_column(f["meta"][k]) for k in f["meta"]}
        except (OSError, KeyError) as exc:
            raise StoreError(f"{self.path}: not a readable neurokit patch store ({exc})") from exc
        if attrs.get("format") != FORMAT:
            raise StoreError(f"{self.path}: format {attrs.get('format')!r}, expected {FORMAT!r}")
        if not attrs.get("complete"):
            raise StoreError(f"{self.path}: incomplete store (prepare did not finish); rerun prepare")
        self.attrs = attrs
        self._h5 = None

    def __len__(self) -> int:
        return self.n_samples

    @property
    def modality(self) -> str:
        return self.attrs.get("modality", "eeg")

    def _file(self):
        import h5py

        if self._h5 is None:
            self._h5 = h5py.File(self.path, "r")
        OPEN_FILES.touch(self)
        return self._h5

    def patches(self, idx) -> np.ndarray:
        """Patch tensor(s) at ``idx`` (int, slice or sorted index array) as float32."""
        if self._starts is None:
            return self._file()["patches"][idx]
        frames, T = self._file()["frames"], self.sample_shape[0]
        if isinstance(idx, (int, np.integer)):
            s = int(self._starts[idx])
            return frames[s : s + T][:, self._patch_index]
        return np.stack([frames[s : s + T][:, self._patch_index] for s in self._starts[idx]]).astype(np.float32, copy=False)

    def close(self) -> None:
        if self._h5 is not None:
            self._h5.close()
            self._h5 = None

    def __getstate__(self):  # DataLoader workers reopen the file themselves
        d = dict(self.__dict__)
        d["_h5"] = None
        return d

    def __repr__(self) -> str:
        return f"PatchStore({str(self.path)!r}, n={self.n_samples}, sample_shape={self.sample_shape}, modality={self.modality!r})"


def _read_column(ds) -> np.ndarray:
    data = ds[:]
    if data.dtype.kind == "O":  # fixed-width unicode: no Python object per sample
        return ds.asstr()[:].astype(str) if len(data) else np.zeros(0, dtype="U1")
    return data


