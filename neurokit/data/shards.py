"""Shard sets: one store written as many complete patch stores (one per recording) plus an index.

Layout of a shard set (a folder)::

    OUT/index.json        {"format", "complete", "attrs" (shared: card, recipe, ch_names, …),
                           "shards": [{"file", "key", "n_samples"}, …]}
    OUT/shard-000000.h5   a complete PatchStore (its own ``sources``); written as .partial, then renamed

Crash safety: a shard is renamed into place only when complete, and the index is replaced atomically
(write + fsync + ``os.replace``) after each shard, so a ``prepare`` killed or stopped by a full disk keeps
every recording already written; ``resume=True`` (CLI ``--resume``) skips them. Readers
(:func:`~neurokit.data.store.open_stores`, :class:`~neurokit.data.dataset.PatchDataset`) take the folder
as one store. :func:`merge_shard_sets` joins sets made on different machines after checking that card,
recipe and channels agree.
"""
from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Sequence

from .._errors import StoreError
from .store import PatchStoreWriter

SET_FORMAT = "neurokit-shard-set/1"
INDEX = "index.json"
#: attributes that must agree for shards to belong to one set
SHARED_KEYS = ("modality", "card", "task", "recipe", "ch_names", "sfreq", "units", "label_names", "template", "grid")


def is_shard_set(path: str | Path) -> bool:
    return (Path(path) / INDEX).is_file()


def read_index(path: str | Path) -> dict:
    """The index of the shard set at ``path``.

    Raises
    ------
    StoreError
        No index, or not a neurokit shard set.
    """
    p = Path(path) / INDEX
    try:
        idx = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path}: not a readable shard set ({exc})") from exc
    if idx.get("format") != SET_FORMAT:
        raise StoreError(f"{path}: format {idx.get('format')!r}, expected {SET_FORMAT!r}")
    return idx


def shard_paths(path: str | Path, *, allow_incomplete: bool = False) -> list[Path]:
    """Files of the shard set at ``path``, in order.

    Raises
    ------
    StoreError
        The set is unfinished (``prepare`` stopped: rerun it with ``--resume``) unless ``allow_incomplete``.
    """
    idx = read_index(path)
    if not idx.get("complete") and not allow_incomplete:
        raise StoreError(
            f"{path}: unfinished shard set ({len(idx['shards'])} recordings written); rerun the same prepare "
            "command with --resume to finish it"
        )
    return [Path(path) / s["file"] for s in idx["shards"]]


def _shared(attrs: dict) -> dict:
    return json.loads(json.dumps({k: attrs[k] for k in SHARED_KEYS if k in attrs}, default=str))


def _write_index(folder: Path, index: dict) -> None:
    tmp = folder / (INDEX + ".tmp")
    with open(tmp, "w") as f:
        json.dump(index, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / INDEX)


class ShardSetWriter:
    """Writer of a shard set: :meth:`shard` gives a :class:`~neurokit.data.store.PatchStoreWriter` for one
    recording; the shard joins the index when its ``with`` block ends without error.

    Parameters
    ----------
    folder : path
        The set's folder (made if missing).
    sample_shape, attrs, **writer_kw
        As :class:`~neurokit.data.store.PatchStoreWriter`; ``attrs`` are written into every shard.
    resume : bool
        Continue an unfinished (or finished) set: its shared attributes must equal ``attrs``'.
    overwrite : bool
        Delete an existing set first.

    Raises
    ------
    FileExistsError
        The folder holds a set and neither ``resume`` nor ``overwrite`` is given.
    StoreError
        ``resume`` on a set made with a different card, task, recipe or channels.
    """

    def __init__(self, folder: str | Path, sample_shape: Sequence[int], *, attrs: dict[str, Any], resume: bool = False,
                 overwrite: bool = False, **writer_kw) -> None:
        self.folder = Path(folder)
        self.sample_shape = tuple(sample_shape)
        self.attrs = dict(attrs)
        self.writer_kw = writer_kw
        if self.folder.exists() and not self.folder.is_dir():
            raise StoreError(f"{self.folder}: exists and is not a folder; a shard set is written to a folder")
        shared = _shared(self.attrs)
        self.index = {"format": SET_FORMAT, "complete": False, "attrs": shared, "shards": []}
        if is_shard_set(self.folder):
            if overwrite:
                shutil.rmtree(self.folder)
            elif resume:
                old = read_index(self.folder)
                diff = sorted(k for k in set(old["attrs"]) | set(shared) if old["attrs"].get(k) != shared.get(k))
                if diff:
                    raise StoreError(f"{self.folder}: cannot resume: the set was made with other {', '.join(diff)}")
                self.index = {**old, "complete": False}
            else:
                raise FileExistsError(
                    f"{self.folder}: a shard set is there; pass resume=True (CLI: --resume) to add the recordings it "
                    "lacks, or overwrite=True (--overwrite) to start again"
                )
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_index(self.folder, self.index)

    @property
    def keys(self) -> set[str]:
        """Keys of the recordings already in the set."""
        return {s["key"] for s in self.index["shards"]}

    @property
    def n(self) -> int:
        return sum(s["n_samples"] for s in self.index["shards"])

    @contextmanager
    def shard(self, key: str, **attrs: Any):
        """Write one recording's shard (``key``: e.g. its resolved path); empty shards are not kept."""
        k = len(self.index["shards"])
        name = f"shard-{k:06d}.h5"
        while (self.folder / name).exists():  # a file left by an interrupted run that never reached the index
            k += 1
            name = f"shard-{k:06d}.h5"
        w = PatchStoreWriter(self.folder / name, self.sample_shape, attrs={**self.attrs, **attrs}, overwrite=True,
                             **self.writer_kw)
        try:
            yield w
        except BaseException:
            w.abort()
            raise
        if w.n == 0:
            w.abort()
            return
        w.close()
        self.index["shards"].append({"file": name, "key": key, "n_samples": int(w.n)})
        _write_index(self.folder, self.index)

    def close(self, **attrs: Any) -> Path:
        """Mark the set complete (``attrs``: extra set-level facts for the index). Returns the folder."""
        if not self.index["shards"]:
            raise StoreError(f"{self.folder}: no samples were written")
        self.index.update(attrs)
        self.index["complete"] = True
        _write_index(self.folder, self.index)
        return self.folder


def merge_shard_sets(sets: Iterable[str | Path], out: str | Path, *, link: bool = True) -> Path:
    """Join shard sets (e.g. made on several machines) into one set at ``out``.

    The sets must be complete and agree on card, task, recipe, channels and sample shape; shards are
    hard-linked into ``out`` (copied across file systems, or when ``link=False``).

    Raises
    ------
    StoreError
        A set is unfinished, or two sets differ (the message names the fields).
    FileExistsError
        ``out`` exists.
    """
    from .store import PatchStore

    sets = [Path(s) for s in sets]
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out}: exists; give a new folder for the merged set")
    indexes = [read_index(s) for s in sets]
    for s, idx in zip(sets, indexes):
        if not idx.get("complete"):
            raise StoreError(f"{s}: unfinished shard set; finish it (prepare --resume) before merging")
        diff = sorted(k for k in set(idx["attrs"]) | set(indexes[0]["attrs"])
                      if idx["attrs"].get(k) != indexes[0]["attrs"].get(k))
        if diff:
            raise StoreError(f"{s}: differs from {sets[0]} in {', '.join(diff)}; only sets of one card and recipe merge")
    shapes = {PatchStore(s / idx["shards"][0]["file"]).sample_shape for s, idx in zip(sets, indexes)}
    if len(shapes) > 1:
        raise StoreError(f"sample shapes differ between the sets: {sorted(shapes)}")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    merged = {"format": SET_FORMAT, "complete": True, "attrs": indexes[0]["attrs"], "shards": []}
    seen = set()
    for s, idx in zip(sets, indexes):
        for sh in idx["shards"]:
            if sh["key"] in seen:
                raise StoreError(f"{s}: recording {sh['key']} is also in an earlier set; merge each recording once")
            seen.add(sh["key"])
            name = f"shard-{len(merged['shards']):06d}.h5"
            try:
                if not link:
                    raise OSError
                os.link(s / sh["file"], tmp / name)
            except OSError:
                shutil.copy2(s / sh["file"], tmp / name)
            merged["shards"].append({**sh, "file": name})
    _write_index(tmp, merged)
    os.replace(tmp, out)
    return out
