"""Shard sets: one store written as many complete patch stores (one per recording) plus an index.

Layout of a shard set (a folder)::

    OUT/index.json        {"format", "version", "complete", "attrs" (shared: card, recipe, ch_names, …),
                           "corpus" (facts of the whole corpus, stored once: subject_files, participants),
                           "shards": [{"file", "key", "n_samples"}, …],
                           "rejected": [{"key", "n_samples": 0, "n_rejected", "reason"}, …]}
    OUT/index.jsonl       while writing: one line per shard (or rejected recording) since index.json was written
    OUT/shard-000000.h5   a complete PatchStore (its own ``sources``); written as .partial, then renamed

One shard holds one recording: an EEG file (or one member of an archive), or a surface fMRI run (one
file, or one hemisphere or frame block of it); its ``key`` (:func:`recording_key`) names it uniquely. A
recording whose windows were all rejected gets no shard but an entry of ``rejected`` (its key, the windows
rejected and why), so that the set reports it and ``--resume`` does not read it again.

Crash safety: a shard is renamed into place only when complete, and then one line naming it is appended
(and fsynced) to ``index.jsonl``; :meth:`ShardSetWriter.close` folds the journal into ``index.json``
(write + fsync + ``os.replace``) and removes it. Writing N shards thus costs O(N), not the O(N²) of
rewriting the whole index after each shard, and a ``prepare`` killed or stopped by a full disk keeps every
recording already written; ``resume=True`` (CLI ``--resume``) skips them. A finished set's ``index.json``
lists every shard, so code that predates the journal reads it; a set written before (version 1: every
shard carrying the corpus's ``subject_files``) is still read. Readers (:func:`open_stores`,
:class:`~neurokit.data.dataset.PatchDataset`) take the folder as one store (:class:`ShardStore`: each shard
opened once, when first read). :func:`merge_shard_sets` joins sets made on different machines after checking
that card (name and content), task, recipe and channels agree, and the shards' sample shape, mesh and TR.
"""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Sequence

from neurokit._utils.errors import StoreError
from neurokit.store.patch_store import PatchStore, PatchStoreWriter, StoreMeta

SET_FORMAT = "neurokit-shard-set/1"
#: version of the index: 2 keeps corpus-level facts once (``corpus``), appends a journal and lists rejected
#: recordings; version 1 (no ``version`` key) put ``subject_files`` in every shard (still read)
SET_VERSION = 2
INDEX = "index.json"
#: the index's journal: one JSON line per shard written since ``index.json`` was last written
JOURNAL = "index.jsonl"
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
    "sample_dtype",
)
#: facts of the whole corpus (one entry per subject or file of every recording): kept once, in the index's
#: ``corpus``, not in each shard (each shard read them back as its own attributes)
CORPUS_KEYS = ("subject_files", "participants")
#: facts of each shard (known once its recording is read) that must agree between merged sets
SHARD_FACTS = ("mesh", "tr", "onset_unit")


def recording_key(path: str | Path, *parts: str) -> str:
    """Key of one recording in a shard set: the file's resolved path, then ``::part`` for each non-empty
    part that tells recordings of one file apart (an archive member; a hemisphere or frame range).

    Parameters
    ----------
    path : str or Path
        The recording's file.
    *parts : str
        What tells recordings of one file apart; empty ones are left out.

    Returns
    -------
    str
        ``"<resolved path>::<part>::…"``.

    Examples
    --------
    >>> recording_key("/d/Z.zip", "Z001.txt", "")
    '/d/Z.zip::Z001.txt'
    """
    return "::".join([str(Path(path).resolve()), *(str(p) for p in parts if p)])


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full: ``ENOSPC``/``EDQUOT``, also when an
    h5py version reports HDF5's ``errno = 28`` only in the message.

    Parameters
    ----------
    exc : BaseException
        The exception caught while writing.

    Returns
    -------
    bool

    Examples
    --------
    >>> import errno
    >>> disk_full(OSError(errno.ENOSPC, "No space left on device")), disk_full(ValueError("x"))
    (True, False)
    """
    from neurokit._utils.disk import is_disk_full

    return isinstance(exc, OSError) and is_disk_full(exc)


def disk_full_error(out: str | Path, what: str | Path) -> StoreError:
    """The error for a full disk while writing one store (not a shard set): nothing of it is kept.

    Parameters
    ----------
    out : str or Path
        The store being written.
    what : str or Path
        What was being written when the disk filled (a recording, a shard).

    Returns
    -------
    StoreError
        To be raised by the caller, who has removed the unfinished store.
    """
    kept = "the store that was there before is unchanged" if Path(out).is_file() else "nothing was kept"
    return StoreError(
        f"{out}: disk full while writing {what}; {kept} (the unfinished store was removed). Free "
        "space, then run the same command again, or write per-recording shards (shards=True) so that a "
        "stop keeps what is done"
    )


def _dtype_change(old: dict, new: dict) -> str:
    """`` (float16 where this run writes float32)``-style words when the two headers' sample dtypes differ."""
    was, now = old.get("sample_dtype") or "float32", new.get("sample_dtype") or "float32"
    return "" if was == now else f" (samples stored as {was}; this run writes {now}: dtype={was!r} resumes it)"


def _differences(a: dict, b: dict) -> list[str]:
    names = {"card_body": "card content", "sample_dtype": "dtype"}
    return sorted(names.get(k, k) for k in set(a) | set(b) if a.get(k) != b.get(k))


def _recipe_changes(old: dict, new: dict) -> str:
    """`` (window_s=4.0 in the set, window_s=2 given)``: the recipe fields that differ, with both values."""
    a, b = old.get("recipe"), new.get("recipe")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return ""
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if not keys:
        return ""
    return (
        f" ({', '.join(f'{k}={a.get(k)!r}' for k in keys)} in the set, {', '.join(f'{k}={b.get(k)!r}' for k in keys)}"
        " given)"
    )


def is_shard_set(path: str | Path) -> bool:
    """Whether ``path`` is a shard set: a folder holding the set's ``index.json`` (complete or not).

    Parameters
    ----------
    path : str or Path
        Any path.

    Returns
    -------
    bool

    Examples
    --------
    >>> import tempfile
    >>> is_shard_set(tempfile.mkdtemp())
    False
    """
    return (Path(path) / INDEX).is_file()


def _read_journal(folder: Path) -> list[dict]:
    """The entries appended to the set's journal since its ``index.json`` was written (a torn last line, from a
    process killed while appending, is left out: its shard never counted as written)."""
    try:
        text = (folder / JOURNAL).read_text()
    except FileNotFoundError:
        return []
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        try:
            out.append(json.loads(line))
        except ValueError:
            if i == len(lines) - 1:
                break
            raise StoreError(
                f"{folder / JOURNAL}: line {i + 1} is not JSON; the shard set's journal is damaged: rerun the "
                "prepare command with overwrite=True"
            ) from None
    return out


def read_index(path: str | Path) -> dict:
    """The index of the shard set at ``path``: ``index.json`` with the entries its journal appended since.

    Always has ``version`` (1 for sets written before the journal), ``corpus`` (corpus-level facts; empty for
    version 1, whose shards hold them) and ``rejected`` (recordings with no window kept; empty for version 1).

    Parameters
    ----------
    path : str or Path
        The shard set's folder.

    Returns
    -------
    dict
        The index: ``format``, ``version``, ``shards`` (``{"file", "key", "n_samples"}`` per shard, ``key`` its
        recording's :func:`recording_key`), ``corpus``, ``rejected`` and the set's shared attributes.

    Raises
    ------
    StoreError
        No index, or not a neurokit shard set.
    """
    folder = Path(path)
    p = folder / INDEX
    try:
        idx = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise StoreError(
            f"{path}: not a readable shard set ({exc}); give the folder a prepare run with shards=True wrote"
        ) from exc
    if idx.get("format") != SET_FORMAT:
        raise StoreError(
            f"{path}: format {idx.get('format')!r}, expected {SET_FORMAT!r}; rewrite it with this neurokit's "
            "prepare (shards=True, overwrite=True)"
        )
    version = int(idx.get("version", 1))
    if version > SET_VERSION:
        raise StoreError(
            f"{path}: a shard set of index version {version}, newer than this neurokit reads ({SET_VERSION}); "
            "upgrade neurokit, or rewrite the set with this one (prepare with shards=True, overwrite=True)"
        )
    idx["version"] = version
    idx.setdefault("corpus", {})
    idx.setdefault("rejected", [])
    entries = _read_journal(folder)
    if entries:
        have = {s["key"] for s in idx["shards"]} | {r["key"] for r in idx["rejected"]}
        for e in entries:  # a journal left beside an index that already folded it in (killed in between)
            kind = "rejected" if "rejected" in e else "shard"
            if e[kind]["key"] not in have:
                idx["shards" if kind == "shard" else "rejected"].append(e[kind])
                have.add(e[kind]["key"])
    return idx


#: what a reader of a set says of a shard it cannot open (the index lists its recording: a resume rebuilds it)
REBUILD = "rerun the prepare command that made the set with resume=True to rebuild it from its recording"


def shard_problem(folder: str | Path, entry: dict) -> str | None:
    """What is wrong with one shard of the set at ``folder`` (``entry``: its line of the index), or None: the file
    missing, not a readable complete store, or holding another number of samples than the index says. Reads the
    file's attributes and dataset shapes only.

    Parameters
    ----------
    folder : str or Path
        The shard set's folder.
    entry : dict
        The shard's entry of the index (``file``, ``key``, ``n_samples``).

    Returns
    -------
    str or None
        The problem in a few words (``"no such store"``, ``"not a readable store (…)"``, …).

    Examples
    --------
    >>> import tempfile
    >>> shard_problem(tempfile.mkdtemp(), {"file": "shard-000000.h5", "key": "a.edf", "n_samples": 4})
    'no such store'
    """
    import h5py

    path = Path(folder) / entry["file"]
    if not path.is_file():
        return "no such store"
    try:
        with h5py.File(path, "r") as f:
            complete = f.attrs.get("complete")
            n = int(f["sample_start"].shape[0]) if "sample_start" in f else int(f["patches"].shape[0])
            n_labels = int(f["labels"].shape[0])
    except (OSError, KeyError, ValueError) as exc:
        return f"not a readable store ({' '.join(str(exc).split()) or type(exc).__name__})"
    if not complete:
        return "an unfinished store"
    if n != int(entry["n_samples"]) or n_labels != n:
        return f"holds {n} samples where the index says {int(entry['n_samples'])}"
    return None


def damaged_shards(folder: str | Path, idx: dict | None = None) -> dict[str, tuple[dict, str]]:
    """The shards of the set at ``folder`` that cannot be read (:func:`shard_problem`), by recording key:
    ``key → (index entry, problem)``; what ``resume=True`` rebuilds from the recordings.

    Parameters
    ----------
    folder : str or Path
        The shard set's folder.
    idx : dict, optional
        Its index (:func:`read_index`; read here when not given).

    Returns
    -------
    dict of str to (dict, str)
    """
    idx = read_index(folder) if idx is None else idx
    out = {}
    for entry in idx["shards"]:
        problem = shard_problem(folder, entry)
        if problem is not None:
            out[entry["key"]] = (entry, problem)
    return out


def shard_paths(path: str | Path, *, allow_incomplete: bool = False) -> list[Path]:
    """Files of the shard set at ``path``, in order.

    Parameters
    ----------
    path : str or Path
        The shard set's folder.
    allow_incomplete : bool
        Also list the shards of a set ``prepare`` has not finished.

    Returns
    -------
    list of Path
        The shard files, in the order of the index.

    Raises
    ------
    StoreError
        The set is unfinished (``prepare`` stopped: rerun it with ``--resume``) unless ``allow_incomplete``.
    """
    idx = read_index(path)
    _check_complete(path, idx, allow_incomplete)
    return [Path(path) / s["file"] for s in idx["shards"]]


def _check_complete(path: str | Path, idx: dict, allow_incomplete: bool = False) -> None:
    if not idx.get("complete") and not allow_incomplete:
        raise StoreError(
            f"{path}: unfinished shard set ({len(idx['shards'])} recordings written); rerun the same prepare "
            "command with resume=True to finish it"
        )


def _shared(attrs: dict) -> dict:
    return json.loads(json.dumps({k: attrs[k] for k in SHARED_KEYS if k in attrs}, default=str))


def _write_index(folder: Path, index: dict) -> None:
    """Replace ``index.json`` atomically with ``index`` (every entry: the journal is folded in and removed)."""
    tmp = folder / (INDEX + ".tmp")
    with open(tmp, "w") as f:
        json.dump(index, f, separators=(",", ":"))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / INDEX)
    (folder / JOURNAL).unlink(missing_ok=True)


def _append_journal(folder: Path, entry: dict) -> None:
    """Append one entry to the set's journal, on disk (fsynced) before the call returns: O(1) per shard."""
    with open(folder / JOURNAL, "a") as f:
        f.write(json.dumps(entry, separators=(",", ":"), default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


class ShardSetWriter:
    """Writer of a shard set: :meth:`shard` gives a :class:`~neurokit.store.patch_store.PatchStoreWriter` for one
    recording; the shard joins the index (one line appended to its journal) when its ``with`` block ends
    without error. A new set touches the disk only when its first shard is written (a run that fails before
    leaves no folder behind).

    Parameters
    ----------
    folder : path
        The set's folder (made if missing).
    sample_shape, attrs, **writer_kw
        As :class:`~neurokit.store.patch_store.PatchStoreWriter`; ``attrs`` are written into every shard, except the
        corpus-level ones (:data:`CORPUS_KEYS`), kept once in the index.
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
        self.attrs = {k: v for k, v in attrs.items() if k not in CORPUS_KEYS}
        dtype = writer_kw.get("dtype", "float32")
        if dtype != "float32":  # every shard is written in it; the index says it (a float32 set's index as before)
            self.attrs["sample_dtype"] = dtype
        corpus = json.loads(json.dumps({k: attrs[k] for k in CORPUS_KEYS if k in attrs}, default=str))
        self.writer_kw = writer_kw
        if self.folder.exists() and not self.folder.is_dir():
            raise StoreError(f"{self.folder}: exists and is not a folder; a shard set is written to a folder")
        shared = _shared(self.attrs)
        self.index: dict[str, Any] = {
            "format": SET_FORMAT,
            "version": SET_VERSION,
            "complete": False,
            "attrs": shared,
            "corpus": corpus,
            "shards": [],
            "rejected": [],
        }
        self._started = False  # index.json written with this run's header (the journal appends to it)
        self._rebuild: dict[str, dict] = {}  # a resume: key → index entry of a shard to write again (missing, damaged)
        if self.folder.is_dir() and not is_shard_set(self.folder) and any(self.folder.iterdir()):
            raise StoreError(
                f"{self.folder}: a folder of other files, not a shard set; give a new or empty folder "
                "for the shard set (overwrite=True replaces only a shard set)"
            )
        if is_shard_set(self.folder):
            if overwrite:
                shutil.rmtree(self.folder)
            elif resume:
                old = read_index(self.folder)
                diff = _differences(old["attrs"], shared)
                if diff:
                    raise StoreError(
                        f"{self.folder}: cannot resume: the set was made with other {', '.join(diff)}"
                        f"{_recipe_changes(old['attrs'], shared)}{_dtype_change(old['attrs'], shared)}; give the options it was made with, or write a new "
                        "set (overwrite=True, or another output folder)"
                    )
                # the journal folded in once (O(N) per resume); this run's corpus facts replace the old ones
                self.index = {**old, "version": SET_VERSION, "complete": False, "corpus": corpus or old["corpus"]}
                _write_index(self.folder, self.index)
                self._started = True
                # shards deleted or damaged since: written again, under their own names, from their recordings
                self._rebuild = {k: entry for k, (entry, _) in damaged_shards(self.folder, self.index).items()}
                for entry in self._rebuild.values():
                    (self.folder / entry["file"]).unlink(missing_ok=True)
            else:
                raise FileExistsError(
                    f"{self.folder}: a shard set is there; pass resume=True to add the recordings it "
                    "lacks, or overwrite=True to start again"
                )
        self._made = not self.folder.exists()
        self._keys = {s["key"] for s in self.index["shards"]} | {r["key"] for r in self.index["rejected"]}
        self._keys -= set(self._rebuild)
        self._n = sum(int(s["n_samples"]) for s in self.index["shards"] if s["key"] not in self._rebuild)

    @property
    def keys(self) -> set[str]:
        """Keys of the recordings already in the set (those with a readable shard, and those whose windows were all
        rejected); a resume writes the others, and rebuilds the shards in :attr:`rebuilding`."""
        return set(self._keys)

    @property
    def rebuilding(self) -> dict[str, dict]:
        """Recordings whose shard a resume found missing or damaged, by key: their index entries (the shard is
        written again under the same file name)."""
        return dict(self._rebuild)

    @property
    def n(self) -> int:
        return self._n

    @property
    def rejected(self) -> list[dict]:
        """Entries of the recordings that got no shard: every window rejected (``key``, ``n_rejected``,
        ``reason``)."""
        return list(self.index["rejected"])

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
            f"{str(exc).rstrip('.')}; {self.kept()}: fix or remove that file (or skip bad files: skip_bad=True), then "
            "rerun the same command with resume=True"
        )

    def _readable(self) -> list[dict]:
        return [s for s in self.index["shards"] if s["key"] not in self._rebuild]

    def shard_attrs(self, i: int = 0) -> dict | None:
        """Store attributes of the set's ``i``-th readable shard (None when it has fewer shards)."""
        shards = self._readable()
        return PatchStore(self.folder / shards[i]["file"]).attrs if len(shards) > i else None

    def shard_info(self, i: int = 0) -> StoreMeta | None:
        """Typed metadata (:class:`~neurokit.store.patch_store.StoreMeta`) of the set's ``i``-th readable shard (None
        when it has fewer shards)."""
        shards = self._readable()
        return PatchStore(self.folder / shards[i]["file"]).info if len(shards) > i else None

    def _record(self, kind: str, entry: dict) -> None:
        """Add one entry (``kind``: ``"shard"`` or ``"rejected"``) to the index: appended to the journal, or, the
        first time, written with the set's header as ``index.json``."""
        self.index["shards" if kind == "shard" else "rejected"].append(entry)
        try:
            if self._started:
                _append_journal(self.folder, {kind: entry})
            else:
                _write_index(self.folder, self.index)
                self._started = True
        except BaseException:
            self.index["shards" if kind == "shard" else "rejected"].remove(entry)
            raise
        self._keys.add(entry["key"])
        self._n += int(entry["n_samples"])

    @contextmanager
    def shard(self, key: str, *, reason: str | None = None, **attrs: Any):
        """Write one recording's shard (``key``: :func:`recording_key`). A recording that gives no window gets
        no shard but an entry of the index's ``rejected`` (``reason``: why, default "no window kept"; its
        ``n_rejected`` attribute is recorded with it), so the set counts it and a resume skips it.

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
        again = self._rebuild.get(key)
        if again is not None:  # a shard found missing or damaged: written again under its own name and place
            name = again["file"]
        w = None
        try:
            w = PatchStoreWriter(
                self.folder / name, self.sample_shape, attrs={**self.attrs, **attrs}, overwrite=True, **self.writer_kw
            )
            yield w
            if w.n == 0:
                w.abort()
                if again is not None:  # its recording gives no window now: no longer a shard
                    self.index["shards"].remove(again)
                    _write_index(self.folder, self.index)
                    del self._rebuild[key]
                self._record(
                    "rejected",
                    {
                        "key": key,
                        "n_samples": 0,
                        "n_rejected": int(attrs.get("n_rejected") or 0),
                        "reason": reason or "no window kept",
                    },
                )
                return
            w.close()
            if again is not None:
                self._rebuilt(again, int(w.n))
                return
            try:
                self._record("shard", {"file": name, "key": key, "n_samples": int(w.n)})
            except BaseException:  # the index does not list it: take the file away too
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
                    "rerun the same command with resume=True"
                ) from exc
            raise

    def _rebuilt(self, entry: dict, n: int) -> None:
        """The shard of ``entry`` written again (``n`` samples): its index entry, in its place, says so."""
        del self._rebuild[entry["key"]]
        self._keys.add(entry["key"])
        self._n += n
        if int(entry["n_samples"]) != n:
            entry["n_samples"] = n
            _write_index(self.folder, self.index)

    def close(self, **attrs: Any) -> Path:
        """Mark the set complete (``attrs``: extra set-level facts for the index), folding the journal into
        ``index.json``. Returns the folder.

        Raises
        ------
        StoreError
            No shard was written (every recording's windows rejected, or none read), a shard found missing or
            damaged was not written again (its recording is not among this run's), or the disk filled up.
        """
        if self._rebuild:
            keys = sorted(self._rebuild)
            files = ", ".join(self._rebuild[k]["file"] for k in keys[:5])
            raise StoreError(
                f"{self.folder}: shard(s) {files} {'are' if len(keys) > 1 else 'is'} missing or damaged, and "
                f"{'their recordings are' if len(keys) > 1 else 'its recording is'} not among this run's "
                f"({', '.join(keys[:3])}{' …' if len(keys) > 3 else ''}): rerun with the inputs that made the set "
                "(its data root, subjects and files) and resume=True"
            )
        if not self.index["shards"]:
            rej = self.index["rejected"]
            why = f" (every window of the {len(rej)} recording(s) read was rejected)" if rej else ""
            raise StoreError(
                f"{self.folder}: no samples were written{why}; raise the recipe's reject_uv (or check the "
                "recordings' units), then run the command again"
            )
        self.index.update(attrs)
        self.index["complete"] = True
        self.index["n_rejected_recordings"] = len(self.index["rejected"])
        try:
            _write_index(self.folder, self.index)
        except OSError as exc:
            if disk_full(exc):
                raise StoreError(
                    f"{self.folder}: disk full while finishing the index; every recording is kept. "
                    "Free space, then rerun the same command with resume=True"
                ) from exc
            raise
        return self.folder


def merge_shard_sets(sets: Iterable[str | Path], out: str | Path, *, link: bool = True) -> Path:
    """Join shard sets (e.g. made on several machines) into one set at ``out``.

    The sets must be complete and agree on card (name and content), task, recipe, channels (EEG), template
    and grid (surface), and on their shards' sample shape, mesh and TR (:data:`SHARED_KEYS`,
    :data:`SHARD_FACTS`); shards are hard-linked into ``out`` (copied across file systems, or when
    ``link=False``). The corpus-level facts of the sets (:data:`CORPUS_KEYS`) are joined, and their rejected
    recordings kept.

    Parameters
    ----------
    sets : iterable of str or Path
        The shard sets' folders, in the order their shards are to follow each other.
    out : str or Path
        The new set's folder; it must not exist.
    link : bool
        Hard-link the shards (``False``: copy them).

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    StoreError
        A set is unfinished, or two sets differ (the message names the fields).
    FileExistsError
        ``out`` exists.
    """
    sets = [Path(s) for s in sets]
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out}: exists; give a new folder for the merged set")
    indexes = [read_index(s) for s in sets]
    for s, idx in zip(sets, indexes):
        if not idx.get("complete"):
            raise StoreError(f"{s}: unfinished shard set; finish it (prepare with resume=True) before merging")
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
    merged: dict[str, Any] = {
        "format": SET_FORMAT,
        "version": SET_VERSION,
        "complete": True,
        "attrs": indexes[0]["attrs"],
        "corpus": _merge_corpus([idx["corpus"] for idx in indexes]),
        "shards": [],
        "rejected": [],
    }
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
        for r in idx["rejected"]:
            if r["key"] not in seen:
                seen.add(r["key"])
                merged["rejected"].append(r)
    merged["n_rejected_recordings"] = len(merged["rejected"])
    _write_index(tmp, merged)
    os.replace(tmp, out)
    return out


def _merge_corpus(corpora: Sequence[dict]) -> dict:
    """The corpus-level facts of several sets as one: mappings (subject → files, subject → columns) joined,
    a subject's file lists joined."""
    out: dict[str, Any] = {}
    for c in corpora:
        for k, v in c.items():
            if not isinstance(v, dict):
                out.setdefault(k, v)
                continue
            mine = out.setdefault(k, {})
            for sk, sv in v.items():
                if isinstance(sv, list) and isinstance(mine.get(sk), list):
                    mine[sk] = sorted(set(mine[sk]) | set(sv))
                else:
                    mine.setdefault(sk, sv)
    return out


class ShardStore(PatchStore):
    """One shard of a shard set, read as a :class:`~neurokit.store.patch_store.PatchStore` that opens its file only when
    first read (its labels, metadata, attributes or samples): its length comes from the set's index, so a
    dataset over a set of N shards costs O(N) to build and one read opens one shard. Its :attr:`attrs` are its own
    with the set's corpus-level facts (:data:`CORPUS_KEYS`) beside them.

    Parameters
    ----------
    path : path
        The shard file.
    set_path : path
        The shard set's folder (:attr:`set_path`; the corpus of :func:`store_corpus`).
    n_samples : int
        Its windows, as the index says (checked when the file is opened).
    shared : dict
        The set's shared attributes (``modality``, ``ch_names``, …).
    corpus : dict
        The set's corpus-level facts.
    sample_shape : tuple of int, optional
        The set's sample shape (checked when the file is opened); ``None`` opens the file now.
    key : str, optional
        Its recording's key in the index (named when the file cannot be read).

    Raises
    ------
    StoreError
        When the file is opened: missing, not a complete store, or it differs from what the index says (the
        message says to rebuild it with a resumed prepare).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        set_path: str | Path,
        n_samples: int,
        shared: dict | None = None,
        corpus: dict | None = None,
        sample_shape: Sequence[int] | None = None,
        key: str | None = None,
    ) -> None:
        d = self.__dict__
        d["path"] = Path(path)
        d["_file_path"] = Path(path).absolute()  # fixed now: the shard opens later, whatever chdir came between
        d["_key"] = key
        d["set_path"] = Path(set_path)
        d["n_samples"] = int(n_samples)
        d["_shared"] = dict(shared or {})
        d["_corpus"] = dict(corpus or {})
        d["_loaded"] = False
        if sample_shape is None:
            self._load()
        else:
            d["sample_shape"] = tuple(int(v) for v in sample_shape)

    @property
    def loaded(self) -> bool:
        """Whether the shard's file has been opened (its labels and metadata read)."""
        return bool(self.__dict__.get("_loaded"))

    def _load(self) -> None:
        d = self.__dict__
        want_n, want_shape = d["n_samples"], d.get("sample_shape")
        shown = d["path"]
        # reading settings given to the shard before its file was opened (set_readahead over a set) outlive the opening
        settings: dict[str, Any] = {k: d[k] for k in ("readahead", "advise_on_read") if k in d}
        try:
            PatchStore.__init__(self, d["_file_path"])
        except (FileNotFoundError, StoreError) as exc:
            d["path"] = shown
            problem = str(exc).removeprefix(f"{d['_file_path']}: ")
            of = f" (recording {d['_key']})" if d.get("_key") else ""
            raise StoreError(f"{shown}: {problem}; a shard of the set {d['set_path']}{of}: {REBUILD}") from None
        d["path"] = shown
        d.update(settings)
        d["_loaded"] = True
        if d["_corpus"]:  # the corpus-level facts, kept once in the index, read as the shard's own
            self.attrs = {**d["_corpus"], **self.attrs}
            self.info = StoreMeta.from_attrs(self.attrs, where=str(self.path))
        want_dtype = d["_shared"].get("sample_dtype") or "float32"
        if d["_shared"] and self.sample_dtype != want_dtype:  # every shard of a set in the set's dtype
            raise StoreError(
                f"{self.path}: samples stored as {self.sample_dtype}, where the index of {d['set_path']} says "
                f"{want_dtype}; the set was changed after it was written: {REBUILD}"
            )
        if self.n_samples != want_n or (want_shape is not None and tuple(self.sample_shape) != want_shape):
            raise StoreError(
                f"{self.path}: holds {self.n_samples} samples of shape {tuple(self.sample_shape)}, where the index of "
                f"{d['set_path']} says {want_n} of shape {want_shape}; the set was changed after it was written: "
                f"{REBUILD}"
            )

    def __getattr__(self, name: str) -> Any:
        # called only for attributes not set yet: those PatchStore.__init__ sets, read from the file on first use
        if name.startswith("__") or self.__dict__.get("_loaded", True):
            raise AttributeError(name)
        self._load()
        return object.__getattribute__(self, name)

    @property
    def modality(self) -> str:
        return self._shared.get("modality") or self.info.modality

    def close(self) -> None:
        if self.loaded:
            super().close()

    def __repr__(self) -> str:
        return f"ShardStore({str(self.path)!r}, n={self.n_samples}, sample_shape={self.sample_shape}, set={str(self.set_path)!r})"


def store_corpus(store: PatchStore) -> str:
    """The corpus a store's samples belong to: a shard set's folder for its shards (:class:`ShardStore`), the
    file for any other store.

    Parameters
    ----------
    store : PatchStore
        An open store or shard.

    Returns
    -------
    str
        The shard set's folder, or the store's file.

    Examples
    --------
    >>> store_corpus(open_stores(["runs/set"])[3])  # doctest: +SKIP
    'runs/set'
    """
    return str(store.set_path) if isinstance(store, ShardStore) else str(store.path)


def open_shard_set(path: str | Path, *, allow_incomplete: bool = False) -> list[ShardStore]:
    """The shards of the set at ``path`` as :class:`ShardStore`\\ s, in order: the index is read once and the
    first shard opened (its sample shape is the set's); the others open when first read.

    Parameters
    ----------
    path : str or Path
        The shard set's folder.
    allow_incomplete : bool
        Open the shards written so far of a set ``prepare`` has not finished.

    Returns
    -------
    list of ShardStore
        One per shard, in the index's order.

    Raises
    ------
    StoreError
        Unfinished (rerun prepare with ``--resume``), or no shard.
    """
    idx = read_index(path)
    _check_complete(path, idx, allow_incomplete)
    if not idx["shards"]:
        raise StoreError(f"{path}: a shard set without shards; rerun the prepare command with overwrite=True")
    shared, corpus = idx["attrs"], idx["corpus"]
    first = ShardStore(
        Path(path) / idx["shards"][0]["file"],
        set_path=path,
        n_samples=idx["shards"][0]["n_samples"],
        shared=shared,
        corpus=corpus,
        key=idx["shards"][0]["key"],
    )
    shape = first.sample_shape
    return [first] + [
        ShardStore(
            Path(path) / s["file"],
            set_path=path,
            n_samples=s["n_samples"],
            shared=shared,
            corpus=corpus,
            sample_shape=shape,
            key=s["key"],
        )
        for s in idx["shards"][1:]
    ]


def open_stores(paths: Iterable[str | Path | PatchStore]) -> list[PatchStore]:
    """Open several stores (files, or shard-set folders: each of their shards, opened when first read) and check
    they agree on sample shape, modality and channel names (a set's shards: by its index).

    Parameters
    ----------
    paths : iterable of str, Path or PatchStore
        Store files, shard-set folders or stores already open (kept as given).

    Returns
    -------
    list of PatchStore
        The stores, a shard set expanded into its shards.

    Raises
    ------
    StoreError
        No store given, stores of different sample shapes or modalities, or different channel names.

    Examples
    --------
    >>> stores = open_stores(["runs/mi.h5", "runs/tueg_set"])  # doctest: +SKIP
    >>> sum(len(s) for s in stores)  # doctest: +SKIP
    48210
    """
    stores: list[PatchStore] = []
    for p in paths:
        if isinstance(p, PatchStore):
            stores.append(p)
        elif is_shard_set(p):  # a shard set reads as its shards, in order
            stores.extend(open_shard_set(p))
        else:
            stores.append(PatchStore(p))
    if not stores:
        raise StoreError("no store given")
    ref = stores[0]
    ref_ch = ref.info.ch_names
    for s in stores[1:]:
        if s.sample_shape != ref.sample_shape or s.modality != ref.modality:
            raise StoreError(
                f"{s.path}: sample shape {s.sample_shape}/{s.modality} differs from "
                f"{ref.path}: {ref.sample_shape}/{ref.modality}; give stores of one kind"
            )
        if isinstance(s, ShardStore) and not s.loaded:  # its set's shared channels (checked against its own when read)
            ch = s._shared.get("ch_names")
            ch = tuple(ch) if ch is not None else None
        else:
            ch = s.info.ch_names
        if ch != ref_ch:
            raise StoreError(f"{s.path}: channel names differ from {ref.path}; give stores of one montage")
    return stores
