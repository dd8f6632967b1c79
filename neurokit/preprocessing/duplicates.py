"""Recordings compared by content before and while a store is written (both preparers): the same file given twice
is read once, the same recording under different subjects is refused unless kept on purpose.

A file reached by two names (a repeated ``-f`` path, two spellings, a symbolic or hard link) is one file: the
second is dropped with a warning. Files of equal size are hashed (:func:`~neurokit._utils.hashing.file_sha256`),
and those of equal SHA-256 (and archive member) are one recording: under the same subject it is read once, with a
warning; under different subjects (a copy filed as another person, which would put one recording in two splits)
the preparation stops, naming both files, unless ``allow_duplicate_recordings`` keeps them, and the store then
records them in its ``duplicate_recordings`` attribute.

Copies whose bytes differ (a header edited, anonymised otherwise, or another start date; the recording exported
to another format: EDF → FIF, BrainVision, or EDF again) are known by their samples: each recording read gets a
:func:`signal_fingerprint` of the samples as read (after the recipe's channel selection, before any filter; EEG in
volts): its sampling rate, channel and sample counts, and the mean and RMS of each channel over
:data:`N_BLOCKS` equal stretches that tile it and over one-second blocks in their middles. Two fingerprints
match when rate, channel and sample counts are equal and every statistic agrees within
:data:`SIGNAL_TOLERANCE` of the recording's RMS: float32 storage and 16-bit EDF re-quantisation stay far below
it, while different recordings, two runs of one subject, a recording and its cropped version (another length)
or the same recording a sample later differ by far more. The fingerprint is taken from the samples the preparer
reads anyway, so the check comes while the store is written (:class:`SignalDuplicates`, in file order): a match
under another subject stops the preparation as a SHA-256 copy does (the unfinished store is discarded, a store
that was there before is kept, a shard set keeps its finished shards), or is kept and recorded
(``"match": "signal"``) with ``allow_duplicate_recordings``; a match under the same subject is written once,
with a warning naming both.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, TypeVar

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit._utils.hashing import file_sha256

logger = logging.getLogger("neurokit")

T = TypeVar("T")


def recording_name(path: str | Path, member: str = "") -> str:
    """How the duplicate checks name a recording (in messages and ``duplicate_recordings``).

    Parameters
    ----------
    path : str or Path
        The recording's file.
    member : str
        The file's member inside an archive, or ``""``.

    Returns
    -------
    str
        The path, followed by ``[member]`` for an archive member.

    Examples
    --------
    >>> recording_name("bonn/Z.zip", "Z/Z001.txt")
    'bonn/Z.zip[Z/Z001.txt]'
    """
    return f"{path}[{member}]" if member else str(path)


def unique_recordings(
    items: Sequence[T],
    ids: Callable[[T], tuple[Path, str, str]],
    *,
    allow_duplicates: bool = False,
) -> tuple[list[T], list[dict], dict[str, str]]:
    """``items`` without a second reading of one file or of one recording's content.

    Parameters
    ----------
    items : sequence
        The recordings to prepare, in order (EEG :class:`~neurokit.io.entry.FileEntry`, surface ``(path, meta)``).
    ids : callable
        ``item -> (path, archive member or "", subject)``.
    allow_duplicates : bool
        Keep identical recordings under different subjects (CLI ``--allow-duplicate-recordings``).

    Returns
    -------
    (kept, duplicates, hashes)
        ``kept``: the items to read, in order; ``duplicates``: one ``{"match": "sha256", "sha256", "member", "files",
        "subjects"}`` per recording kept under several subjects (``[]`` without ``allow_duplicates``); ``hashes``: resolved path →
        SHA-256 of each file hashed here (the preparer records it without hashing again).

    Raises
    ------
    DataFileError
        Identical recordings under different subjects, without ``allow_duplicates`` (naming both files and
        subjects, and the option).

    Examples
    --------
    >>> kept, dups, _ = unique_recordings(entries, lambda e: (e.path, e.member, e.subject))  # doctest: +SKIP
    """
    kept: list[T] = []
    seen: dict[tuple, tuple[Path, str]] = {}  # (device, inode, member) → (path, subject) first given
    for it in items:
        path, member, subject = ids(it)
        try:
            st = os.stat(path)
            key: tuple = (st.st_dev, st.st_ino, member)
        except OSError:  # a missing file: the reader says so
            key = (str(Path(path).absolute()), member)
        if key in seen:
            first, first_subject = seen[key]
            how = "the same path" if Path(first) == Path(path) else "the same file by another name"
            logger.warning(
                "%s%s: %s as %s%s (subject %s); read once, as subject %s",
                path,
                f"[{member}]" if member else "",
                how,
                first,
                f"[{member}]" if member else "",
                subject,
                first_subject,
            )
            continue
        seen[key] = (Path(path), subject)
        kept.append(it)
    # equal content: only files of equal size can be, so only those are hashed
    sizes: dict[int, list[T]] = {}
    for it in kept:
        try:
            sizes.setdefault(os.path.getsize(ids(it)[0]), []).append(it)
        except OSError:
            continue
    hashes: dict[str, str] = {}
    groups: dict[tuple[str, str], list[T]] = {}
    for same_size in sizes.values():
        paths = {str(Path(ids(it)[0]).resolve()) for it in same_size}
        if len(same_size) < 2 or len(paths) < 2:
            continue
        for it in same_size:
            path, member, _ = ids(it)
            res = str(Path(path).resolve())
            if res not in hashes:
                hashes[res] = file_sha256(path)
            groups.setdefault((hashes[res], member), []).append(it)
    drop: set[int] = set()
    duplicates: list[dict] = []
    for (sha, member), group in groups.items():
        if len(group) < 2:
            continue
        subjects = list(dict.fromkeys(ids(it)[2] for it in group))
        files = [recording_name(ids(it)[0], member) for it in group]
        if len(subjects) > 1:
            if not allow_duplicates:
                a, b = group[0], next(it for it in group if ids(it)[2] != ids(group[0])[2])
                raise DataFileError(
                    _refusal(
                        str(ids(a)[0]),
                        ids(a)[2],
                        str(ids(b)[0]),
                        ids(b)[2],
                        f"SHA-256 {sha[:12]}…{', member ' + member if member else ''}",
                    )
                    + (f"; {len(files)} files in all: {', '.join(files)}" if len(files) > 2 else "")
                )
            duplicates.append(
                {"match": "sha256", "sha256": sha, "member": member, "files": files, "subjects": subjects}
            )
            logger.warning(
                "%s: the same recording (SHA-256 %s…) under subjects %s; kept (allow_duplicate_recordings=True)",
                ", ".join(files),
                sha[:12],
                ", ".join(subjects),
            )
            continue
        logger.warning(
            "%s: the same recording (SHA-256 %s…) of subject %s; read once, from %s",
            ", ".join(files),
            sha[:12],
            subjects[0],
            files[0],
        )
        drop.update(id(it) for it in group[1:])
    return [it for it in kept if id(it) not in drop], duplicates, hashes


def _refusal(a: str, subject_a: str, b: str, subject_b: str, how: str) -> str:
    """The one line that refuses one recording under two subjects (``how``: what shows it is the same)."""
    return (
        f"{a} (subject {subject_a}) and {b} (subject {subject_b}) hold the same recording ({how}); one recording "
        "under two subjects would be trained and tested on. Leave the copy out, or keep both on purpose with "
        "allow_duplicate_recordings=True (recorded in the store)"
    )


# ------------------------------------------------------------------------------------------ signal fingerprints
#: two fingerprints match when every statistic agrees within this fraction of the recording's RMS. Measured on
#: EEGMMIDB S001R04, 64 channels (``tests/test_preprocessing_duplicates_signal.py``): FIF (float32) 2e-8,
#: BrainVision 0, EDF written again by ``mne.export`` (16-bit, a new gain) 2e-5, and 1.2e-4 when a 5 mV spike
#: on one channel widens the exported physical range; different recordings (other runs, other subjects) differ
#: by 2-5 × the RMS in their largest statistic, the same recording one sample later by 2.5e-2.
SIGNAL_TOLERANCE = 1e-3
#: the recording is cut into this many equal stretches (every sample counts), and as many one-second blocks
#: are taken, one in the middle of each stretch (a copy shifted in time differs in them)
N_BLOCKS = 8
#: rows (channels; surface vertices) beyond this many are pooled into this many contiguous groups
MAX_ROWS = 256


class SignalAccumulator:
    """A :func:`signal_fingerprint` built from a recording's samples as they are read, whole or in chunks.

    Parameters
    ----------
    n_times : int
        Samples (frames) of the recording.
    rate : float | None
        Samples per second (EEG ``sfreq``; surface ``1 / TR``); ``None``: blocks of one sample.

    Examples
    --------
    >>> acc = SignalAccumulator(raw.n_times, raw.info["sfreq"])  # doctest: +SKIP
    >>> acc.add(0, raw.get_data())  # doctest: +SKIP
    >>> acc.fingerprint()["n_rows"]  # doctest: +SKIP
    64
    """

    def __init__(self, n_times: int, rate: float | None) -> None:
        self.n_times = int(n_times)
        self.rate = float(rate) if rate and math.isfinite(rate) and rate > 0 else None
        n = max(self.n_times, 1)
        length = max(1, min(int(round(self.rate or 1)), n // N_BLOCKS))
        tiles = [(k * n // N_BLOCKS, (k + 1) * n // N_BLOCKS) for k in range(N_BLOCKS)]
        mids = [min(n - length, max(0, int((k + 0.5) * n / N_BLOCKS - length / 2))) for k in range(N_BLOCKS)]
        self.ranges = [r for r in tiles if r[1] > r[0]] + [(m, m + length) for m in mids]
        self.n_rows = 0
        self.edges = np.zeros(0, dtype=int)  # row groups, set by the first block
        self.sums = np.zeros((0, 0))  # (ranges, row groups): sums of the samples, then of their squares
        self.squares = np.zeros((0, 0))

    def add(self, start: int, block) -> None:
        """Take in ``block`` (``(n_rows, k)``: the samples ``start … start + k - 1`` of every row)."""
        x = np.asarray(block)
        if not self.n_rows:
            self.n_rows = x.shape[0]
            self.edges = np.linspace(0, self.n_rows, min(self.n_rows, MAX_ROWS) + 1).astype(int)
            self.sums = np.zeros((len(self.ranges), len(self.edges) - 1))
            self.squares = np.zeros_like(self.sums)
        for i, (lo, hi) in enumerate(self.ranges):
            a, b = max(lo, start), min(hi, start + x.shape[1])
            if a < b:
                part = x[:, a - start : b - start].astype(np.float64, copy=False)
                self.sums[i] += np.add.reduceat(part.sum(axis=1), self.edges[:-1])
                self.squares[i] += np.add.reduceat(np.einsum("ij,ij->i", part, part), self.edges[:-1])

    def fingerprint(self) -> dict | None:
        """``{"rate", "n_rows", "n_times", "rms", "stats"}``: ``stats`` the mean, then the RMS, of each row (or
        group of rows, past :data:`MAX_ROWS`) over each stretch and each block; ``rms`` over the whole recording.
        ``None`` with nothing to compare (no samples, every sample 0, values not finite)."""
        if self.n_rows < 1 or self.n_times < 1:
            return None
        size = np.outer([hi - lo for lo, hi in self.ranges], np.diff(self.edges))
        mean, sq = self.sums / size, self.squares / size
        tiles = len(self.ranges) - N_BLOCKS
        rms = float(np.sqrt(self.squares[:tiles].sum() / size[:tiles].sum()))
        if not (math.isfinite(rms) and rms > 0 and np.isfinite(mean).all()):
            return None
        stats = np.concatenate([mean.ravel(), np.sqrt(sq).ravel()])
        return {
            "rate": self.rate or 0.0,
            "n_rows": self.n_rows,
            "n_times": self.n_times,
            "rms": rms,
            "stats": stats.tolist(),
        }


def signal_fingerprint(data, rate: float | None) -> dict | None:
    """The fingerprint of one recording's samples: what stays when its file's bytes change but its samples do not.

    The whole-recording form of :class:`SignalAccumulator`.

    Parameters
    ----------
    data : array_like, shape (n_rows, n_times)
        The samples as read (EEG: channels × samples in V; surface: vertices × frames).
    rate : float or None
        Samples per second (EEG ``sfreq`` in Hz); None: blocks of one sample (surface frames, whose TR a copy may
        have lost).

    Returns
    -------
    dict or None
        ``{"rate", "n_rows", "n_times", "rms", "stats"}`` (see :meth:`SignalAccumulator.fingerprint`), or None
        with nothing to compare (no samples, every sample 0, values not finite).

    Examples
    --------
    >>> fp = signal_fingerprint(np.random.default_rng(0).normal(size=(3, 1600)), 160.0)
    >>> fp["n_rows"], fp["n_times"], len(fp["stats"])
    (3, 1600, 96)
    >>> signal_fingerprint(np.zeros((3, 1600)), 160.0) is None
    True
    """
    acc = SignalAccumulator(np.shape(data)[1], rate)
    acc.add(0, data)
    return acc.fingerprint()


def raw_fingerprint(raw) -> dict | None:
    """:func:`signal_fingerprint` of an MNE ``Raw``: every channel it holds, in V, read whole.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    dict or None
        As :func:`signal_fingerprint`, at ``raw.info["sfreq"]``.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 100.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 500)) * 1e-5, info, verbose=False)
    >>> raw_fingerprint(raw)["rate"]
    100.0
    """
    return signal_fingerprint(raw.get_data(), float(raw.info["sfreq"]))


def fingerprint_distance(a: dict, b: dict) -> float:
    """How far apart two fingerprints are: the largest difference of their block statistics over the larger RMS.

    They match at :data:`SIGNAL_TOLERANCE` or less.

    Parameters
    ----------
    a, b : dict
        Fingerprints of :func:`signal_fingerprint`.

    Returns
    -------
    float
        The relative difference; ``inf`` when their rate, channel or sample counts differ.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(3, 1600))
    >>> fingerprint_distance(signal_fingerprint(x, 160.0), signal_fingerprint(x.astype(np.float32), 160.0)) < 1e-6
    True
    >>> fingerprint_distance(signal_fingerprint(x, 160.0), signal_fingerprint(x[:, :800], 160.0))
    inf
    """
    if _shape(a) != _shape(b):
        return math.inf
    diff = np.abs(np.asarray(a["stats"], dtype=np.float64) - np.asarray(b["stats"], dtype=np.float64))
    return float(diff.max() / max(a["rms"], b["rms"]))


def _shape(fp: dict) -> tuple:
    return round(float(fp["rate"]), 6), int(fp["n_rows"]), int(fp["n_times"]), len(fp["stats"])


@dataclass
class _Seen:
    """A recording written (or indexed) with its fingerprint: who it is, and its record when kept as a copy."""

    name: str
    subject: str
    fingerprint: dict
    record: dict | None = None


class DuplicateRecordingError(DataFileError):
    """One recording under two subjects, found by its samples (never skipped as a bad file by ``skip_bad``).

    Parameters
    ----------
    message : str
        Names both files and subjects, and how to keep them (``allow_duplicate_recordings=True``).
    """


class SignalDuplicates:
    """The signal-fingerprint check of one preparation, fed each recording as it is read, in file order.

    Fingerprints are bucketed by rate, channel and sample counts and by the RMS to 1 % (a recording is compared
    only with those of its bucket and the two beside it), so the check stays about linear in the recordings.

    Parameters
    ----------
    allow : bool
        Keep a match under another subject (``allow_duplicate_recordings``), recorded in ``records``.
    records : list of dict, optional
        The store's ``duplicate_recordings`` (the SHA-256 ones of :func:`unique_recordings` first); matches kept
        are appended (``{"match": "signal", "files", "subjects", "distance"}``), and pairs already there (one
        SHA-256) are not recorded again.
    rows, times : str
        Words for rows and samples in messages (``"channels"``, ``"samples"``; surface ``"vertices"``, ``"frames"``).
    tolerance : float
        Largest :func:`fingerprint_distance` of a match (default :data:`SIGNAL_TOLERANCE`).

    Examples
    --------
    >>> check = SignalDuplicates(allow=False)
    >>> check.check(raw_fingerprint(raw), "S001R04.edf", "S001")  # True: write it  # doctest: +SKIP
    """

    def __init__(
        self,
        allow: bool = False,
        records: list[dict] | None = None,
        *,
        rows: str = "channels",
        times: str = "samples",
        tolerance: float = SIGNAL_TOLERANCE,
    ) -> None:
        self.allow, self.records = allow, records if records is not None else []
        self.rows, self.times, self.tolerance = rows, times, tolerance
        self._buckets: dict[tuple, list[_Seen]] = {}

    def _cell(self, fp: dict) -> int:
        return math.floor(math.log(fp["rms"]) / math.log(1.01))

    def _match(self, fp: dict) -> tuple[_Seen, float] | None:
        shape, cell = _shape(fp), self._cell(fp)
        for c in (cell - 1, cell, cell + 1):
            for seen in self._buckets.get((shape, c), ()):
                d = fingerprint_distance(fp, seen.fingerprint)
                if d <= self.tolerance:
                    return seen, d
        return None

    def discard(self, fingerprints) -> None:
        """Forget recordings indexed by :meth:`check` whose writing failed after all (these fingerprints)."""
        gone = {id(fp) for fp in fingerprints if fp}
        for bucket in self._buckets.values():
            bucket[:] = [x for x in bucket if id(x.fingerprint) not in gone]

    def _add(self, seen: _Seen) -> None:
        self._buckets.setdefault((_shape(seen.fingerprint), self._cell(seen.fingerprint)), []).append(seen)

    def _known(self, a: str, b: str) -> bool:
        """Whether ``a`` and ``b`` are one SHA-256 recording kept already (recorded by :func:`unique_recordings`)."""
        return any(r.get("match") == "sha256" and a in r["files"] and b in r["files"] for r in self.records)

    def check(self, fp: dict | None, name: str, subject: str) -> bool:
        """Whether to write the recording ``name`` of ``subject`` (fingerprint ``fp``; ``None``: not compared).

        ``False``: its samples are those of a recording of the same subject written before (a warning names
        both). A match under another subject is kept and recorded with ``allow``.

        Raises
        ------
        DuplicateRecordingError
            Its samples are those of another subject's recording, without ``allow`` (naming both files and
            subjects, and the option).
        """
        if not fp:
            return True
        subject = str(subject)
        hit = self._match(fp)
        if hit is None:
            self._add(_Seen(name, subject, fp))
            return True
        first, d = hit
        if first.name == name or self._known(first.name, name):
            return True
        at = f" at {fp['rate']:g} Hz" if fp["rate"] else ""
        how = (
            f"the same samples, though the files differ: {fp['n_rows']} {self.rows} × {fp['n_times']} "
            f"{self.times}{at}, statistics within {d:.1e} of the RMS"
        )
        if first.subject == subject:
            logger.warning(
                "%s: %s as %s (subject %s); written once, from %s", name, how, first.name, subject, first.name
            )
            return False
        if not self.allow:
            raise DuplicateRecordingError(_refusal(first.name, first.subject, name, subject, how))
        if first.record is None:
            first.record = {"match": "signal", "files": [first.name], "subjects": [first.subject], "distance": d}
            self.records.append(first.record)
        rec = first.record
        rec["files"].append(name)
        if subject not in rec["subjects"]:
            rec["subjects"].append(subject)
        rec["distance"] = max(rec["distance"], d)
        self._add(_Seen(name, subject, fp, rec))
        logger.warning(
            "%s, %s: the same recording (%s) under subjects %s and %s; kept (allow_duplicate_recordings=True)",
            first.name,
            name,
            how,
            first.subject,
            subject,
        )
        return True

    def index_shards(self, folder: str | Path, keys: set[str] | None = None) -> None:
        """Index the recordings of the shard set at ``folder`` (those of ``keys``; default all), from the
        ``signal_fingerprints`` its shards record (:meth:`shard_attrs`), so that a resumed run compares the
        recordings it adds with them."""
        from neurokit.store.shards import read_index
        from neurokit.store.patch_store import PatchStore

        idx = read_index(folder)
        # the copies an earlier run kept stay recorded (a later copy of one joins its record)
        kept = [r for r in idx.get("duplicate_recordings") or [] if r.get("match") == "signal"]
        self.records.extend(r for r in kept if r not in self.records)
        for sh in idx["shards"]:
            if keys is not None and sh["key"] not in keys:
                continue
            st = PatchStore(Path(folder) / sh["file"])
            try:
                for item in st.attrs.get("signal_fingerprints") or []:
                    if item.get("fingerprint"):
                        rec = next((r for r in kept if item["name"] in r["files"]), None)
                        self._add(_Seen(item["name"], str(item["subject"]), item["fingerprint"], rec))
            finally:
                st.close()

    @staticmethod
    def shard_attrs(items: Sequence[tuple[dict | None, str, str]]) -> dict:
        """The shard attribute that records ``(fingerprint, name, subject)`` of its recordings (for a resume)."""
        return {"signal_fingerprints": [{"name": n, "subject": str(s), "fingerprint": fp} for fp, n, s in items if fp]}


def stopped_by(exc: DuplicateRecordingError, out: str | Path, kept: str | None) -> DuplicateRecordingError:
    """The error that stops a preparation at a duplicate, completed with what the stop keeps.

    Parameters
    ----------
    exc : DuplicateRecordingError
        The duplicate found.
    out : str or Path
        The store being written.
    kept : str or None
        For a shard set, what its finished shards keep (:meth:`~neurokit.store.shards.ShardSetWriter.kept`) and how to
        go on; None for a single store, whose unfinished file is discarded
        (:meth:`~neurokit.store.patch_store.PatchStoreWriter.abort`).

    Returns
    -------
    DuplicateRecordingError
        ``exc``'s message followed by ``kept``, or by the fact that ``out`` was not written and a store there
        before is unchanged.

    Examples
    --------
    >>> str(stopped_by(DuplicateRecordingError("a.edf and b.edf are one recording"), "/nonexistent/x.h5", None))
    'a.edf and b.edf are one recording; /nonexistent/x.h5 was not written'
    """
    if kept:
        return DuplicateRecordingError(f"{exc}; {kept}; then rerun the same command with resume=True")
    before = " (the store that was there is unchanged)" if Path(out).exists() else ""
    return DuplicateRecordingError(f"{exc}; {out} was not written{before}")
