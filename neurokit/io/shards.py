"""Shard sets: one store written as many complete patch stores (one per recording) plus an index.

Layout of a shard set (a folder)::

    OUT/index.json        {"format", "complete", "attrs" (shared: card, recipe, ch_names, …),
                           "shards": [{"file", "key", "n_samples"}, …]}
    OUT/shard-000000.h5   a complete PatchStore (its own ``sources``); written as .partial, then renamed

One shard holds one recording: an EEG file (or one member of an archive), or a surface fMRI run (one
file, or one hemisphere or frame block of it); its ``key`` (:func:`recording_key`) names it uniquely.
Crash safety: a shard is renamed into place only when complete, and the index is replaced atomically
(write + fsync + ``os.replace``) after each shard, so a ``prepare`` killed or stopped by a full disk keeps
every recording already written; ``resume=True`` (CLI ``--resume``) skips them. Readers
(:func:`~neurokit.io.shards.open_stores`, :class:`~neurokit.data.dataset.PatchDataset`) take the folder
as one store. :func:`merge_shard_sets` joins sets made on different machines after checking that card
(name and content), task, recipe and channels agree, and the shards' sample shape, mesh and TR.
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Sequence

from neurokit._utils.errors import StoreError
from neurokit.io.store import PatchStore, PatchStoreWriter, StoreMeta

SET_FORMAT = "neurokit-shard-set/1"
INDEX = "index.json"
#: attributes that must agree for shards to belong to one set (EEG and surface alike; absent keys agree)
SHARED_KEYS = (
    "modality",
    "card",
    "card_body",
    "task",
    "recipe",
    "ch_names",
    "sfreq",
    "units",
    "label_names",
    "template",
    "grid",
)
#: facts of each shard (known once its recording is read) that must agree between merged sets
SHARD_FACTS = ("mesh", "tr", "onset_unit")


def recording_key(path: str | Path, *parts: str) -> str:
    """Key of one recording in a shard set: the file's resolved path, then ``::part`` for each non-empty
    part that tells recordings of one file apart (an archive member; a hemisphere or frame range)."""
    return "::".join([str(Path(path).resolve()), *(str(p) for p in parts if p)])


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full: ``ENOSPC``/``EDQUOT``, also when an
    h5py version reports HDF5's ``errno = 28`` only in the message."""
    from neurokit._utils.disk import is_disk_full

    return isinstance(exc, OSError) and is_disk_full(exc)


def disk_full_error(out: str | Path, what: str | Path) -> StoreError:
    """The error for a full disk while writing one store (not a shard set): nothing of it is kept."""
    kept = "the store that was there before is unchanged" if Path(out).is_file() else "nothing was kept"
    return StoreError(
        f"{out}: disk full while writing {what}; {kept} (the unfinished store was removed). Free "
        "space, then run the same command again, or write per-recording shards (--shards) so that a "
        "stop keeps what is done"
    )


def _differences(a: dict, b: dict) -> list[str]:
    names = {"card_body": "card content"}
    return sorted(names.get(k, k) for k in set(a) | set(b) if a.get(k) != b.get(k))


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
    """Writer of a shard set: :meth:`shard` gives a :class:`~neurokit.io.store.PatchStoreWriter` for one
    recording; the shard joins the index when its ``with`` block ends without error. A new set touches the
    disk only when its first shard is written (a run that fails before leaves no folder behind).

    Parameters
    ----------
    folder : path
        The set's folder (made if missing).
    sample_shape, attrs, **writer_kw
        As :class:`~neurokit.io.store.PatchStoreWriter`; ``attrs`` are written into every shard.
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

    def __init__(
        self,
        folder: str | Path,
        sample_shape: Sequence[int],
        *,
        attrs: dict[str, Any],
        resume: bool = False,
        overwrite: bool = False,
        **writer_kw,
    ) -> None:
        self.folder = Path(folder)
        self.sample_shape = tuple(sample_shape)
        self.attrs = dict(attrs)
        self.writer_kw = writer_kw
        if self.folder.exists() and not self.folder.is_dir():
            raise StoreError(f"{self.folder}: exists and is not a folder; a shard set is written to a folder")
        shared = _shared(self.attrs)
        self.index: dict[str, Any] = {"format": SET_FORMAT, "complete": False, "attrs": shared, "shards": []}
        if self.folder.is_dir() and not is_shard_set(self.folder) and any(self.folder.iterdir()):
            raise StoreError(
                f"{self.folder}: a folder of other files, not a shard set; give a new or empty folder "
                "for the shard set (--overwrite replaces only a shard set)"
            )
        if is_shard_set(self.folder):
            if overwrite:
                shutil.rmtree(self.folder)
            elif resume:
                old = read_index(self.folder)
                diff = _differences(old["attrs"], shared)
                if diff:
                    raise StoreError(f"{self.folder}: cannot resume: the set was made with other {', '.join(diff)}")
                self.index = {**old, "complete": False}
                _write_index(self.folder, self.index)
            else:
                raise FileExistsError(
                    f"{self.folder}: a shard set is there; pass resume=True (CLI: --resume) to add the recordings it "
                    "lacks, or overwrite=True (--overwrite) to start again"
                )
        self._made = not self.folder.exists()

    @property
    def keys(self) -> set[str]:
        """Keys of the recordings already in the set."""
        return {s["key"] for s in self.index["shards"]}

    @property
    def n(self) -> int:
        return sum(s["n_samples"] for s in self.index["shards"])

    def kept(self) -> str:
        """What a stop keeps, for messages: ``"the N recordings written before are kept in FOLDER"``."""
        n = len(self.index["shards"])
        return (
            f"the {n} recording{'s' if n != 1 else ''} written before {'are' if n != 1 else 'is'} kept in {self.folder}"
        )

    def stopped(self, exc: Exception) -> Exception:
        """``exc`` (a bad recording that stops the run) with what the set keeps and how to go on (``exc``
        itself while the set holds nothing)."""
        if not self.index["shards"]:
            return exc
        return type(exc)(
            f"{str(exc).rstrip('.')}; {self.kept()}: fix or remove that file (or skip bad files: --skip-bad), then "
            "rerun the same command with --resume"
        )

    def shard_attrs(self, i: int = 0) -> dict | None:
        """Store attributes of the set's ``i``-th shard (None when it has fewer shards)."""
        from neurokit.io.store import PatchStore

        shards = self.index["shards"]
        return PatchStore(self.folder / shards[i]["file"]).attrs if len(shards) > i else None

    def shard_info(self, i: int = 0) -> StoreMeta | None:
        """Typed metadata (:class:`~neurokit.io.store.StoreMeta`) of the set's ``i``-th shard (None when it
        has fewer shards)."""
        shards = self.index["shards"]
        return PatchStore(self.folder / shards[i]["file"]).info if len(shards) > i else None

    @contextmanager
    def shard(self, key: str, **attrs: Any):
        """Write one recording's shard (``key``: :func:`recording_key`); empty shards are not kept.

        Raises
        ------
        StoreError
            The disk filled up: the shard is dropped, the recordings written before are kept, and the
            message says to free space and rerun with ``--resume``.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        k = len(self.index["shards"])
        name = f"shard-{k:06d}.h5"
        while (self.folder / name).exists():  # a file left by an interrupted run that never reached the index
            k += 1
            name = f"shard-{k:06d}.h5"
        w = None
        try:
            w = PatchStoreWriter(
                self.folder / name, self.sample_shape, attrs={**self.attrs, **attrs}, overwrite=True, **self.writer_kw
            )
            yield w
            if w.n == 0:
                w.abort()
                return
            w.close()
            try:
                self.index["shards"].append({"file": name, "key": key, "n_samples": int(w.n)})
                _write_index(self.folder, self.index)
            except BaseException:  # the index does not list it: take the file away too
                self.index["shards"] = [s for s in self.index["shards"] if s["file"] != name]
                (self.folder / name).unlink(missing_ok=True)
                raise
        except BaseException as exc:
            if w is not None:
                w.abort()
            if self._made and not self.index["shards"] and not any(self.folder.iterdir()):
                self.folder.rmdir()  # a new set that got no shard: leave nothing behind
            if disk_full(exc) and not self.index["shards"]:
                raise StoreError(
                    f"{self.folder}: disk full while writing {key}; no recording was kept. Free space, "
                    "then run the same command again"
                ) from exc
            if disk_full(exc):
                raise StoreError(
                    f"{self.folder}: disk full while writing {key}; {self.kept()}. Free space, then "
                    "rerun the same command with --resume"
                ) from exc
            raise

    def close(self, **attrs: Any) -> Path:
        """Mark the set complete (``attrs``: extra set-level facts for the index). Returns the folder."""
        if not self.index["shards"]:
            raise StoreError(f"{self.folder}: no samples were written")
        self.index.update(attrs)
        self.index["complete"] = True
        try:
            _write_index(self.folder, self.index)
        except OSError as exc:
            if disk_full(exc):
                raise StoreError(
                    f"{self.folder}: disk full while finishing the index; every recording is kept. "
                    "Free space, then rerun the same command with --resume"
                ) from exc
            raise
        return self.folder


def merge_shard_sets(sets: Iterable[str | Path], out: str | Path, *, link: bool = True) -> Path:
    """Join shard sets (e.g. made on several machines) into one set at ``out``.

    The sets must be complete and agree on card (name and content), task, recipe, channels (EEG), template
    and grid (surface), and on their shards' sample shape, mesh and TR (:data:`SHARED_KEYS`,
    :data:`SHARD_FACTS`); shards are hard-linked into ``out`` (copied across file systems, or when
    ``link=False``).

    Raises
    ------
    StoreError
        A set is unfinished, or two sets differ (the message names the fields).
    FileExistsError
        ``out`` exists.
    """
    from neurokit.io.store import PatchStore

    sets = [Path(s) for s in sets]
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out}: exists; give a new folder for the merged set")
    indexes = [read_index(s) for s in sets]
    for s, idx in zip(sets, indexes):
        if not idx.get("complete"):
            raise StoreError(f"{s}: unfinished shard set; finish it (prepare --resume) before merging")
        diff = _differences(idx["attrs"], indexes[0]["attrs"])
        if diff:
            raise StoreError(
                f"{s}: differs from {sets[0]} in {', '.join(diff)}; only sets of one card and recipe merge"
            )
    facts = []
    for s, idx in zip(sets, indexes):
        st = PatchStore(s / idx["shards"][0]["file"])
        # as JSON text: a NaN TR (no file stated one) equals another
        facts.append(
            {
                k: json.dumps(v, default=str)
                for k, v in {"sample shape": list(st.sample_shape), **{k: st.info.get(k) for k in SHARD_FACTS}}.items()
            }
        )
    for s, f in zip(sets[1:], facts[1:]):
        diff = _differences(f, facts[0])
        if diff:
            raise StoreError(
                f"{s}: its shards differ from those of {sets[0]} in {', '.join(diff)} "
                f"({', '.join(f'{f[k]} vs {facts[0][k]}' for k in diff)}); only sets of one kind merge"
            )
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


def open_stores(paths: Iterable[str | Path | PatchStore]) -> list[PatchStore]:
    """Open several stores (files, or shard-set folders: each of their shards) and check they agree on
    sample shape, modality and channel names."""
    from neurokit.io.shards import is_shard_set, shard_paths

    stores = []
    for p in paths:
        if isinstance(p, PatchStore):
            stores.append(p)
        elif is_shard_set(p):  # a shard set reads as its shards, in order
            stores.extend(PatchStore(s) for s in shard_paths(p))
        else:
            stores.append(PatchStore(p))
    if not stores:
        raise StoreError("no store given")
    ref = stores[0]
    for s in stores[1:]:
        if s.sample_shape != ref.sample_shape or s.modality != ref.modality:
            raise StoreError(
                f"{s.path}: sample shape {s.sample_shape}/{s.modality} differs from "
                f"{ref.path}: {ref.sample_shape}/{ref.modality}"
            )
        if s.info.ch_names != ref.info.ch_names:
            raise StoreError(f"{s.path}: channel names differ from {ref.path}")
    return stores
