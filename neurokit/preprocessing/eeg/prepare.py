"""EEG preparer: a card's recordings (or a list of files) through the card's :class:`~neurokit.cards.recipes.EEGRecipe`
into one HDF5 patch store or a shard set, in parallel (processes or a Dask cluster), streaming long recordings.

:func:`prepare_eeg` lists the recordings (:func:`eeg_entries`), sends one :class:`EEGJob` per recording to
:func:`_eeg_job` (in this process, worker processes or a Dask cluster) and writes the results, in file order,
through :class:`_EEGWriting` into a store or shard set."""

from __future__ import annotations

import errno
import functools
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

from neurokit._utils.errors import (
    CardError,
    ChannelMismatchError,
    ConfigError,
    Float16OverflowError,
    DataFileError,
    ScratchError,
    StoreError,
)
from neurokit._utils.progress import progress_bar
from neurokit._utils.version import VERSION as __version__
from neurokit.cards import DataCard
from neurokit.geometry.channels import ChannelRenames
from neurokit.io.entry import FileEntry
from neurokit.io.notes import raw_notes
from neurokit.store.shards import (
    CORPUS_KEYS,
    ShardSetWriter,
    damaged_shards,
    disk_full,
    disk_full_error,
    is_shard_set,
    read_index,
    recording_key,
)
from neurokit.store.patch_store import FLOAT16_MAX, PatchStoreWriter, check_store_dtype
from neurokit.preprocessing.duplicates import (
    DuplicateRecordingError,
    SignalDuplicates,
    recording_name,
    stopped_by,
    unique_recordings,
)
from neurokit.preprocessing.options import EEGOptions, PrepareOptions

logger = logging.getLogger("neurokit")


#: precision of the large FFTs of filtering and resampling in ``prepare``: float32, about twice as fast as float64
#: and within a few float32 steps of MNE's float64 result (≈ 3e-6 of the RMS; ≤ 1.5e-6 in the store's 100 µV
#: units on S001R04, ``tests/test_preprocessing_eeg_filtering.py``), which the float32 windows round to anyway
PREPARE_FFT_DTYPE = np.float32

#: recipe fields of an EEG card that ``prepare`` (CLI: the flags above) may override
EEG_RECIPE_OPTIONS = ("window_s", "crop_start_s", "crop_end_s", "line_freq", "min_duration_s", "event_repeated")


def eeg_recipe(card: DataCard, *, channels: Sequence[str] | None = None, task: str | None = None, **overrides):
    """The :class:`~neurokit.cards.recipes.EEGRecipe` a store of ``card`` is prepared with.

    The card's recipe (with the ``preprocessing`` of ``task`` over it, when that task gives one), with
    ``channels`` and the non-None ``overrides`` applied.

    Parameters
    ----------
    card : DataCard
        An EEG data card (:func:`~neurokit.cards.load_card`).
    channels : sequence of str, optional
        Channels to keep, in this order (10-05 names); default the recipe's.
    task : str, optional
        A task of the card whose ``preprocessing`` block applies over the card's.
    **overrides
        Recipe fields of :data:`EEG_RECIPE_OPTIONS` (``window_s`` in s, ``crop_start_s``, ``crop_end_s``,
        ``line_freq`` in Hz with 0 for none, ``min_duration_s``, ``event_repeated``); None leaves a field as it is.

    Returns
    -------
    EEGRecipe
        The recipe (the card's own object when nothing is overridden).

    Raises
    ------
    ConfigError
        An override of a field not in :data:`EEG_RECIPE_OPTIONS`.
    CardError
        Not an EEG card, or a bad ``preprocessing`` block.

    Examples
    --------
    >>> from neurokit.cards import load_card
    >>> recipe = eeg_recipe(load_card("physionet_mi"), channels=["C3", "Cz", "C4"], window_s=2.0)
    >>> recipe.channels, recipe.window_s, recipe.sfreq
    (['C3', 'Cz', 'C4'], 2.0, 200.0)
    """
    if card.modality != "eeg":
        raise CardError(f"card {card.name!r} is a {card.modality} card, not EEG")
    recipe = card.recipe(task)
    bad = sorted(set(overrides) - set(EEG_RECIPE_OPTIONS))
    if bad:
        raise ConfigError(f"recipe options {bad} cannot be overridden; allowed: {list(EEG_RECIPE_OPTIONS)}")
    upd = {k: v for k, v in overrides.items() if v is not None}
    if upd.get("line_freq") == 0:
        upd["line_freq"] = None
    if channels:
        upd["channels"] = list(channels)
    return type(recipe).from_dict({**recipe.to_dict(), **upd}) if upd else recipe


class EEGJob(NamedTuple):
    """One recording to window, as sent to a worker (picklable; fields in this order).

    Attributes
    ----------
    path : str
        The recording's file (an archive for a clinical reader).
    recipe : dict
        The :class:`~neurokit.cards.recipes.EEGRecipe` as a dict, with the entry's own ``events``.
    read_opts : dict
        Options of :func:`~neurokit.io.read_eeg` (``encoding``, ``units``).
    member : str
        Archive member (clinical readers); ``""`` for a plain file.
    reader : str
        ``"bids"``, a reader of :mod:`neurokit.datasets.classic`, or ``""`` for :func:`~neurokit.io.read_eeg`.
    part_dir : str
        Scratch folder of streamed recordings; ``""``: never stream (Dask workers may not share the disk).
    stream_above : float | None
        Stream recordings above this many bytes of float64 samples (``None``: the default).
    sha256 : str
        The file's SHA-256 when known (hashed by the duplicate check); ``""``: the worker hashes it.
    """

    path: str
    recipe: dict
    read_opts: dict
    member: str = ""
    reader: str = ""
    part_dir: str = ""
    stream_above: float | None = None
    sha256: str = ""


def _eeg_job(job: EEGJob) -> dict:
    """One recording → windows (runs in a worker process or on a Dask worker; module level to pickle).

    Returns ``{"windows", "source", "fingerprint", "warnings"}`` (``fingerprint``: the recording's
    :func:`~neurokit.preprocessing.duplicates.signal_fingerprint`, or ``None``); ``{"dropped", "warnings"}``
    for a recording the recipe drops by rule; ``{"error", "warnings"}`` for a file that raises :class:`DataFileError` /
    :class:`ChannelMismatchError` (the caller decides to skip or stop); ``{"fatal", "warnings"}`` for a
    :class:`ScratchError` (the output's disk, never skipped)."""
    from neurokit._utils.memory import keep_heap_top
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.preprocessing.eeg.windows import RecordingDropped

    keep_heap_top()  # the next recording reuses this one's freed pages (neurokit._utils.memory)
    job = EEGJob(*job)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            w, source, fingerprint = _eeg_file(
                job.path,
                EEGRecipe.from_dict(job.recipe),
                job.read_opts,
                member=job.member,
                reader=job.reader,
                part_dir=job.part_dir,
                stream_above=job.stream_above,
                sha256=job.sha256,
            )
        except RecordingDropped as exc:
            return {"dropped": str(exc), "warnings": [str(c.message) for c in caught]}
        except ScratchError as exc:  # the output's disk, not the recording: never skipped as a bad file
            return {"fatal": exc, "warnings": [str(c.message) for c in caught]}
        except (DataFileError, ChannelMismatchError) as exc:
            return {"error": exc, "warnings": [str(c.message) for c in caught]}
    return {"windows": w, "source": source, "fingerprint": fingerprint, "warnings": [str(c.message) for c in caught]}


def prepare_eeg(
    card: DataCard, out: Path, options: PrepareOptions | None = None, eeg: EEGOptions | None = None
) -> Path:
    """EEG: read → :func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` → windows → store.

    Parameters
    ----------
    card : DataCard
        An EEG card: layout, tasks (events → labels), ``reading`` options and recipe.
    out : Path
        Store to write (``.h5``), or the folder of a shard set (``options.shards``).
    options : PrepareOptions, optional
        What to prepare (task, files, subjects, data root) and how (overwrite, progress, skip_bad,
        shards, resume, n_jobs, scheduler).
    eeg : EEGOptions, optional
        Channels, recipe overrides (``window_s``, ``crop_start_s``, ``crop_end_s``, ``min_duration_s`` in
        s; ``line_freq`` in Hz, 0 = no notch), reading options (``encoding``, ``units``) and
        ``stream_above_mb``.

    Returns
    -------
    Path
        The complete store (or shard-set folder).

    Raises
    ------
    FileExistsError
        A shard set is at ``out`` and neither ``resume`` nor ``overwrite`` is given.
    ConfigError
        A bad option (``stream_above_mb`` < 0, an unknown recipe override).
    ScratchError
        The scratch folder beside ``out`` cannot be made.
    DataFileError
        A bad file (unless ``skip_bad``), channels that differ between files, or no usable recording.
    StoreError
        The disk filled up (a shard set says what it keeps and to rerun with ``--resume``).

    Notes
    -----
    The store records the recipe used. ``skip_bad`` logs and skips files that raise :class:`DataFileError`
    (any reader fault becomes one, naming the file), and, with ``dtype="float16"`` and a card that refuses to clip,
    recordings with values beyond float16's range (their windows written so far are taken back). Recordings the recipe drops by rule
    (``min_duration_s``) are always skipped, and listed in the store's ``dropped`` attribute. Each entry of
    the store's ``sources`` records what was applied to that file (``applied``: original ``sfreq``, band
    edges used, notch, resampling, channels dropped as bad, assumed units, encoding, gaps).
    Recordings go to ``n_jobs`` local worker processes (joblib; -1: every core), or to a Dask
    ``scheduler`` (default ``$DASK_SCHEDULER_ADDRESS``; :mod:`neurokit._utils.parallel`); windows are
    written in file order, so the store's bytes depend on neither. A shard set (:mod:`neurokit.store.shards`)
    keeps every finished recording when the run stops (full disk, kill); ``resume`` then adds only the
    recordings it lacks. Recordings above ``stream_above_mb`` (MiB of float64 samples; default 256) are
    processed in bounded memory, chunk by chunk through scratch files beside ``out``
    (:mod:`neurokit.preprocessing.eeg.stream`; same windows to float64 rounding); not with a Dask scheduler,
    whose workers may not share the disk.

    Examples
    --------
    >>> from neurokit.cards import load_card
    >>> from neurokit.preprocessing.options import build_options
    >>> options, eeg = build_options("eeg", data_root="data/physionet_mi", subjects=[1, 2])
    >>> prepare_eeg(load_card("physionet_mi"), Path("mi.h5"), options, eeg)  # doctest: +SKIP
    PosixPath('mi.h5')
    """
    from neurokit._utils.parallel import map_ordered, scheduler_address

    options, eeg = options or PrepareOptions(), eeg or EEGOptions()
    recipe = eeg_recipe(
        card, channels=eeg.channels, task=card.task(options.task)[0] if card.tasks else None, **eeg.recipe_overrides()
    )
    check_store_dtype(eeg.dtype, recipe.float16_overflow)
    read_opts = {**card.read_options(), **eeg.read_overrides()}
    tname, entries = eeg_entries(card, options)
    entries, duplicates, hashes = unique_recordings(
        entries, lambda e: (e.path, e.member, e.subject), allow_duplicates=options.allow_duplicate_recordings
    )
    read_opts.update(_bids_options(eeg, entries))
    done = _recordings_done(out, options)
    todo = [e for e in entries if recording_key(e.path, e.member) not in done]
    # long recordings are streamed into part stores beside the output (local workers share its disk)
    part_dir = "" if scheduler_address(options.scheduler) else str(out.parent / f".{out.name}.parts")
    stream_above = eeg.stream_above_bytes()
    if part_dir and todo:
        _make_scratch(Path(part_dir), out)
    jobs = [_job(e, recipe, read_opts, part_dir, stream_above, hashes) for e in todo]
    signals = SignalDuplicates(options.allow_duplicate_recordings, duplicates)
    if done:  # a resumed set: the recordings added are compared with those it holds
        signals.index_shards(out, done)
    writing = _EEGWriting(card, out, tname, recipe, entries, options, done, signals, dtype=eeg.dtype)
    closers = []
    try:
        results = map_ordered(_eeg_job, jobs, n_jobs=options.n_jobs, scheduler=options.scheduler)
        closers.append(results.close)
        for e, res in progress_bar(
            zip(todo, results), description=f"prepare {card.name}", enabled=options.progress, total=len(todo)
        ):
            writing.take(e, res)
        path, n_total = writing.close()
    except BaseException:
        writing.abort()
        raise
    finally:
        for close in closers:  # stop the workers first (joblib cancels what is queued, ends what runs)
            close()
        if part_dir and Path(part_dir).is_dir():  # parts of recordings not copied (a stop) are not kept
            import shutil

            shutil.rmtree(part_dir, ignore_errors=True)
    logger.info("wrote %s (%d samples, %d rejected)", path, n_total, writing.n_rejected)
    if isinstance(writing.writer, ShardSetWriter):
        rejected = writing.writer.rejected
        if rejected:  # recorded in the set, so that a --resume does not read them again
            logger.warning(
                "%s: %d recording(s) gave no window (every window rejected), recorded in its index: %s",
                path,
                len(rejected),
                ", ".join(r["key"] for r in rejected[:5]) + ("…" if len(rejected) > 5 else ""),
            )
    return path


def eeg_entries(card: DataCard, options: PrepareOptions) -> tuple[str, list[FileEntry]]:
    """The task and the recordings a preparation reads.

    Either ``options.files`` (:meth:`~neurokit.cards.DataCard.explicit_files`: the subjects, runs and labels the
    card's layout gives them) or the card's layout under ``options.data_root`` (``options.subjects`` only). One
    labelling rule either way (:meth:`~neurokit.cards.DataCard.task_events`).

    Parameters
    ----------
    card : DataCard
        An EEG data card.
    options : PrepareOptions
        The preparation's options (task, files, data root, subjects).

    Returns
    -------
    task : str
        The task's name (the card's first task when ``options.task`` is None).
    entries : list of FileEntry
        The recordings, with subject, run, events and reader.

    Raises
    ------
    CardError
        An unknown task, no recording of the task, or a file the task's run groups cannot label.
    DataFileError
        A later part of a split FIF recording without its first part.

    Examples
    --------
    >>> from neurokit.cards import load_card
    >>> from neurokit.preprocessing.options import PrepareOptions
    >>> task, entries = eeg_entries(load_card("physionet_mi"), PrepareOptions(data_root="data"))  # doctest: +SKIP
    """
    tname, _ = card.task(options.task)
    if not options.files:
        return tname, card.files(options.data_root, tname, subjects=options.subjects)
    return tname, card.explicit_files(options.files, tname, data_root=options.data_root)


def _recordings_done(out: Path, options: PrepareOptions) -> set[str]:
    """Keys of the recordings already in the shard set at ``out`` that a ``resume`` keeps (else none): those
    with a shard and those recorded as rejected (every window rejected).

    Raises
    ------
    FileExistsError
        A shard set is at ``out``, and neither ``resume`` nor ``overwrite`` is given.
    """
    if not (options.shards and is_shard_set(out) and not options.overwrite):
        return set()
    if not options.resume:
        raise FileExistsError(
            f"{out}: a shard set is there; resume=True adds the recordings it lacks, overwrite=True starts again"
        )
    idx = read_index(out)
    if idx["rejected"]:
        logger.info(
            "%s: %d recording(s) whose windows were all rejected are recorded in the set; not read again",
            out,
            len(idx["rejected"]),
        )
    damaged = damaged_shards(out, idx)
    for key, (entry, problem) in damaged.items():
        logger.warning("%s: %s; rebuilt from its recording %s", out / entry["file"], problem, key)
    # a recording whose windows were all rejected has no shard, but an entry: it is not read again
    return {sh["key"] for sh in idx["shards"] if sh["key"] not in damaged} | {r["key"] for r in idx["rejected"]}


def _make_scratch(part_dir: Path, out: Path) -> None:
    """Make the scratch folder of streamed recordings (here, not by the workers: a stop removes it and a
    late worker cannot make it again). Raises :class:`ScratchError` when the output's folder is not writable."""
    try:
        part_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScratchError(
            f"{out.parent}: cannot write beside the output ({exc.strerror or exc})", errno=exc.errno
        ) from exc


def _bids_options(eeg: EEGOptions, entries) -> dict:
    """The reading options only BIDS recordings take (interpolation of bad channels, channels dropped before it);
    refused for recordings of other kinds, which have no ``channels.tsv``."""
    opts = eeg.bids_overrides()
    if opts and any(e.reader != "bids" for e in entries):
        given = ", ".join(
            {"interpolate_bads": "interpolate_bads=False", "drop_channels": "drop_channels="}[k] for k in opts
        )
        raise ConfigError(
            f"{given}: for BIDS recordings (neuro prepare with bids=), whose channels.tsv marks bad channels; "
            "for other recordings choose the channels with channels="
        )
    return opts


def _job(
    e: FileEntry, recipe, read_opts: dict, part_dir: str, stream_above: float | None, hashes: dict | None = None
) -> EEGJob:
    """The :class:`EEGJob` of one recording: the recipe with the entry's own events, if it has them, and the
    file's SHA-256 when the duplicate check hashed it already."""
    rec = recipe if e.events is None else type(recipe).from_dict({**recipe.to_dict(), "events": e.events})
    sha = (hashes or {}).get(str(Path(e.path).resolve()), "")
    return EEGJob(str(e.path), rec.to_dict(), read_opts, e.member, e.reader, part_dir, stream_above, sha)


def store_attrs(
    card: DataCard, tname: str, recipe, ch_names: list[str], entries: Sequence[FileEntry], data_root=None
) -> dict:
    """The attributes of an EEG store (:class:`~neurokit.store.patch_store.StoreMeta` reads them back).

    Card, task, classes, channels, rate (Hz), patch size, units, recipe, version and, for BIDS recordings, the
    ``participants.tsv`` columns of the store's subjects (subject-level labels for any task).

    Parameters
    ----------
    card : DataCard
        The EEG data card.
    tname : str
        The task's name.
    recipe : EEGRecipe
        The recipe the store is prepared with (:func:`eeg_recipe`).
    ch_names : list of str
        The store's channels, in order.
    entries : sequence of FileEntry
        The recordings written.
    data_root : str or Path, optional
        The dataset's root folder: file names in ``subject_files`` are relative to it.

    Returns
    -------
    dict
        Attribute name → value, ready for the store writer.

    Examples
    --------
    >>> attrs = store_attrs(card, "motor_imagery_4class", recipe, ["C3", "Cz"], entries)  # doctest: +SKIP
    >>> attrs["units"], attrs["patch_size"]  # doctest: +SKIP
    ('100 uV', 200)
    """
    attrs = dict(
        modality="eeg",
        card=card.name,
        card_body=card.raw,
        task=tname,
        label_names=card.classes(tname),
        ch_names=ch_names,
        sfreq=recipe.sfreq,
        patch_size=200,
        units="100 uV",
        recipe=recipe.to_dict(),
        neurokit_version=__version__,
    )
    attrs["subject_files"] = subject_files(entries, data_root)
    if (card.raw.get("layout") or {}).get("kind") == "folder":
        attrs["subject_rule"] = card.subject_rule()
    if any(x.reader == "bids" for x in entries):
        from neurokit.io.bids import dataset_root, read_participants

        ids = {x.subject for x in entries}
        first = next(x for x in entries if x.reader == "bids")
        table = read_participants(card.bids_root(data_root) if data_root else dataset_root(first.path))
        attrs["participants"] = {card.store_subject(k): v for k, v in table.items() if card.store_subject(k) in ids}
    return attrs


def subject_files(entries: Sequence[FileEntry], data_root=None) -> dict[str, list[str]]:
    """Which files each subject holds, for the store's ``subject_files`` attribute.

    Parameters
    ----------
    entries : sequence of FileEntry
        The recordings written.
    data_root : str or Path, optional
        The dataset's root folder; files under it are named relative to it.

    Returns
    -------
    dict of str to list of str
        Subject id → its files (archive members as ``archive:member``), sorted and without repeats.

    Examples
    --------
    >>> from pathlib import Path
    >>> from neurokit.io.entry import FileEntry
    >>> entries = [FileEntry(Path("/d/S001/S001R04.edf"), "1"), FileEntry(Path("/d/Z.zip"), "2", member="Z001.txt")]
    >>> subject_files(entries, "/d")
    {'1': ['S001/S001R04.edf'], '2': ['Z.zip:Z001.txt']}
    """
    root = Path(data_root).expanduser().resolve() if data_root else None
    out: dict[str, list[str]] = {}
    for e in entries:
        p = Path(e.path).resolve()
        name = p.relative_to(root).as_posix() if root is not None and p.is_relative_to(root) else str(p)
        out.setdefault(e.subject, []).append(f"{name}:{e.member}" if e.member else name)
    return {k: sorted(set(v)) for k, v in sorted(out.items())}


class _EEGWriting:
    """The store (or shard set) one :func:`prepare_eeg` run writes, fed one recording's result at a time
    (:meth:`take`, in file order); opened at the first recording with windows, so that its channels are
    known."""

    def __init__(
        self,
        card: DataCard,
        out: Path,
        tname: str,
        recipe,
        entries: list[FileEntry],
        options: PrepareOptions,
        done: set[str],
        signals: SignalDuplicates | None = None,
        *,
        dtype: str = "float32",
    ) -> None:
        self.card, self.out, self.tname, self.recipe, self.entries = card, out, tname, recipe, entries
        #: the store's sample dtype, and what float16 does with values beyond its range (the recipe's)
        self.store_kw = {"dtype": dtype, "float16_overflow": recipe.float16_overflow}
        self.half_said = dtype == "float32"  # float16: the first recording's rounding error is said once
        self.options, self.done = options, done
        # recordings compared by their samples as they come (the SHA-256 copies kept are in its records)
        self.signals = signals or SignalDuplicates(options.allow_duplicate_recordings)
        self.labelled = any(e.events or e.label is not None for e in entries)
        # a regression task: float32 targets (the windows' annotation targets), not class indices
        self.regression = card.task(tname)[1].get("kind") == "regression"
        if card.classes(tname) and not self.labelled:
            logger.warning(
                "card %s task %s has classes %s, but none of the %d recordings is labelled by it (no events or "
                "run group applies): the store's windows are unlabelled (-1)",
                card.name,
                tname,
                card.classes(tname),
                len(entries),
            )
        self.writer: PatchStoreWriter | ShardSetWriter | None = None
        self.sources: list[dict] = []
        self.dropped: list[str] = []
        self.skipped: list[str] = []  # unreadable recordings passed over (skip_bad)
        self.n_rejected = 0
        self.n_bad_annotation = 0  # windows dropped for overlapping a BAD… annotation
        self.ch_names: list[str] | None = None

    def take(self, e: FileEntry, res: dict) -> None:
        """Write the result of :func:`_eeg_job` for recording ``e``, or skip it (dropped by the recipe, or
        a bad file with ``skip_bad``). Raises what the result holds otherwise."""
        for msg in res["warnings"]:
            logger.warning("%s", msg)
        if "dropped" in res:
            logger.warning("%s", res["dropped"])
            self.dropped.append(str(e.path))
            return
        if "fatal" in res:
            self._fatal(e, res["fatal"])
        if "error" in res:
            if self.options.skip_bad:
                logger.warning("skipping %s", res["error"])
                self.skipped.append(str(e.path))
                return
            raise self.writer.stopped(res["error"]) if isinstance(self.writer, ShardSetWriter) else res["error"]
        w = res["windows"]
        name = recording_name(e.path, e.member)
        try:
            write = self.signals.check(res.get("fingerprint"), name, str(e.subject))
        except DuplicateRecordingError as exc:
            raise self._refused(exc) from None
        if not write:  # the same samples as a recording of this subject written before: written once
            if isinstance(w, StreamedPart):
                Path(w.path).unlink(missing_ok=True)
            return
        # the store ids the recording is written under: which sources a split's samples came from
        res["source"].update(subject=str(e.subject), session=str(e.session or ""), run=str(e.run or ""))
        self._check_channels(e, w)
        if self.writer is None:
            self._open(w)
        mark = self.writer.mark() if isinstance(self.writer, PatchStoreWriter) else None
        try:
            self._write(e, w, res["source"], res.get("fingerprint"))
            if isinstance(w, StreamedPart):
                Path(w.path).unlink(missing_ok=True)
        except Float16OverflowError as exc:
            if not self.options.skip_bad:
                raise
            if mark is not None and isinstance(self.writer, PatchStoreWriter):
                self.writer.rollback(mark)  # its windows written before the overflow was found (a set drops the shard)
            if isinstance(w, StreamedPart):
                Path(w.path).unlink(missing_ok=True)
            logger.warning("skipping %s", exc)
            self.skipped.append(str(e.path))
            return
        except OSError as exc:  # a shard set says itself what it keeps (a StoreError)
            if not disk_full(exc):
                raise
            raise disk_full_error(self.out, e.path) from exc
        self.n_rejected += w.n_rejected
        self.n_bad_annotation += int(res["source"].get("n_bad_annotation", 0))
        self.sources.append(res["source"])

    def _fatal(self, e: FileEntry, exc: ScratchError) -> None:
        """Stop on a :class:`ScratchError`; for a full disk, say what is kept and how to go on."""
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise exc
        if not self.options.shards:
            raise disk_full_error(self.out, e.path) from exc
        kept = (
            self.writer.kept()
            if isinstance(self.writer, ShardSetWriter)
            else f"the {len(self.done)} recordings already in the set are kept"
            if self.done
            else "no recording was written yet"
        )
        raise StoreError(
            f"{self.out}: disk full while processing {e.path}; {kept}. Free space, then rerun the "
            "same command with resume=True"
        ) from exc

    def _refused(self, exc: DuplicateRecordingError) -> DuplicateRecordingError:
        """``exc`` with what the stop keeps: a shard set its finished shards, a single store nothing (the store
        that was at ``out`` before is left as it was)."""
        if isinstance(self.writer, ShardSetWriter) and self.writer.index["shards"]:
            return stopped_by(exc, self.out, self.writer.kept())
        return stopped_by(
            exc, self.out, f"the {len(self.done)} recordings already in {self.out} are kept" if self.done else None
        )

    def _check_channels(self, e: FileEntry, w) -> None:
        if self.ch_names is None:
            self.ch_names = w.ch_names
        elif w.ch_names != self.ch_names:
            raise DataFileError(
                f"{e.path}: channels {w.ch_names[:5]}… ({len(w.ch_names)}) differ from the store's "
                f"{self.ch_names[:5]}… ({len(self.ch_names)}); give the card a 'channels' list to fix one montage"
            )

    def _open(self, w) -> None:
        shape = w.sample_shape if isinstance(w, StreamedPart) else w.patches.shape[1:]
        attrs = store_attrs(self.card, self.tname, self.recipe, w.ch_names, self.entries, self.options.data_root)
        if self.signals.records:  # the same recording kept under several subjects, on purpose
            attrs["duplicate_recordings"] = self.signals.records
        if self.options.shards and self.regression:
            raise ConfigError(
                f"{self.out}: card {self.card.name!r} task {self.tname!r} is a regression, whose float targets a "
                "shard set does not hold yet; prepare one store (without shards=True)"
            )
        if self.options.shards:
            self.writer = ShardSetWriter(
                self.out,
                shape,
                attrs=attrs,
                resume=self.options.resume,
                overwrite=self.options.overwrite,
                **self.store_kw,
            )
        else:
            dtype = "float32" if self.regression else "int64"
            self.writer = PatchStoreWriter(
                self.out, shape, overwrite=self.options.overwrite, attrs=attrs, label_dtype=dtype, **self.store_kw
            )

    def _write(self, e: FileEntry, w, source: dict, fingerprint: dict | None = None) -> None:
        half = self.store_kw["dtype"] == "float16"
        refuse = half and self.store_kw["float16_overflow"] == "refuse"
        over = {"n": 0, "max": 0.0, "values": 0}

        def put(target):
            for patches, labels, onsets in _batches(w):
                if half:  # counted here, to name the recording (the writer clips, or would refuse one batch)
                    self._say_half_rounding(e, patches)
                    n = _count_above(patches, FLOAT16_MAX)
                    over["values"] += patches.size
                    if n:
                        over["n"] += n
                        over["max"] = max(over["max"], float(np.abs(patches).max()))
                    if refuse and over["n"]:  # count the rest of the recording, write nothing more of it
                        continue
                if e.label is not None:  # subject-level class (participants.tsv column)
                    labels = np.full(len(labels), e.label, dtype=np.int64)
                if self.regression and labels.dtype.kind != "f":
                    raise DataFileError(
                        f"{e.path}: card {self.card.name!r} task {self.tname!r} is a regression, but the windows "
                        "of this file carry no target (annotations '<event>=<number>'); read it with the "
                        "card's dataset reader"
                    )
                target.append(
                    patches,
                    labels if self.labelled else None,
                    onsets=onsets,
                    subject=e.subject,
                    session=e.session,
                    run=e.run,
                )
            if over["n"] and refuse:
                raise Float16OverflowError(
                    f"{recording_name(e.path, e.member)}: {over['n']} of its {over['values']} values are beyond float16's "
                    f"range (|x| > {FLOAT16_MAX:g} in 100 µV units; largest {over['max']:.6g}, i.e. "
                    f"{over['max'] * 1e-4:.3g} V); dtype='float16' would store them as inf: set the card's preprocessing "
                    "float16_overflow: clip to clip them, prepare with dtype='float32', or check the recording's units"
                )
            if over["n"]:
                source["n_float16_clipped"] = over["n"]
                logger.warning(
                    "%s: %d of %d values beyond float16's range (|x| > %g; largest %.6g) clipped to ±%g "
                    "(float16_overflow: clip)",
                    recording_name(e.path, e.member),
                    over["n"],
                    over["values"],
                    FLOAT16_MAX,
                    over["max"],
                    FLOAT16_MAX,
                )

        if not self.options.shards:
            put(self.writer)
            return
        assert isinstance(self.writer, ShardSetWriter)  # take() opens one before writing, a set for shards
        if self.signals.records:  # copies kept so far, in every shard from here on (and the index, at close)
            self.writer.attrs["duplicate_recordings"] = self.signals.records
        name = recording_name(e.path, e.member)
        with self.writer.shard(
            recording_key(e.path, e.member),
            reason=self._no_window_reason(w, source),
            sources=[source],
            n_rejected=int(w.n_rejected),
            **SignalDuplicates.shard_attrs([(fingerprint, name, str(e.subject))]),
        ) as sw:
            put(sw)

    def _say_half_rounding(self, e: FileEntry, patches: np.ndarray) -> None:
        """Log, once per run, the float16 rounding error of the first recording's windows relative to their RMS."""
        if self.half_said or not patches.size:
            return
        self.half_said = True
        x = np.asarray(patches, dtype=np.float64)
        x = np.where(np.abs(x) <= FLOAT16_MAX, x, 0.0)  # what lies beyond is refused or clipped, said apart
        err = x - x.astype(np.float16).astype(np.float64)
        rms, err_rms = float(np.sqrt(np.mean(x**2))), float(np.sqrt(np.mean(err**2)))
        logger.info(
            "float16 store: rounding error of %s's windows %.3g of their RMS (%.3g µV RMS error on %.3g µV RMS); "
            "readers return float32",
            recording_name(e.path, e.member),
            err_rms / rms if rms else 0.0,
            err_rms * 100,
            rms * 100,
        )

    def _no_window_reason(self, w, source: dict) -> str:
        """Why a recording gave no window (recorded in a shard set's ``rejected`` when it gives none)."""
        why = []
        if w.n_rejected:
            why.append(f"{int(w.n_rejected)} window(s) above reject_uv ({self.recipe.reject_uv or 0:g} µV)")
        if source.get("n_bad_annotation"):
            why.append(f"{int(source['n_bad_annotation'])} overlapping BAD… annotations")
        return "every window rejected: " + "; ".join(why) if why else "no window (shorter than one window)"

    def close(self) -> tuple[Path, int]:
        """Finish the store (or set): ``(path, n_samples)``.

        Raises
        ------
        DataFileError
            No recording was usable (all skipped or dropped) and none was written before.
        """
        if self.writer is None and self.done:  # every recording was already in the set: mark it finished
            old = read_index(self.out)["attrs"]  # its options are this run's (a changed one is refused)
            attrs = store_attrs(
                self.card, self.tname, self.recipe, old.get("ch_names"), self.entries, self.options.data_root
            )
            attrs = {k: v for k, v in attrs.items() if k not in CORPUS_KEYS}
            self.writer = ShardSetWriter(self.out, (), attrs=attrs, resume=True, **self.store_kw)
        # nothing written, by this run (no source) nor by an earlier one into a resumed shard set
        nothing = not self.sources and not (isinstance(self.writer, ShardSetWriter) and self.writer.index["shards"])
        if self.writer is None or (nothing and self.skipped):  # every recording skipped: not a reject_uv matter
            self.abort()
            why = [f"{len(self.skipped)} skipped as bad files (skip_bad=True)"] if self.skipped else []
            why += (
                [f"{len(self.dropped)} left out by the recipe's rules (min_duration_s, missing_channels)"]
                if self.dropped
                else []
            )
            raise DataFileError(
                f"prepare {self.card.name}: no usable recording of {len(self.entries)} ({'; '.join(why) or 'all skipped'})"
                + (f"; {self.out} was not created" if self.writer is not None else "")
            )
        dups = {"duplicate_recordings": self.signals.records} if self.signals.records else {}
        if isinstance(self.writer, PatchStoreWriter) and self.writer.n == 0:  # recordings read, no window kept
            self.writer.abort()
            why = (
                [f"{self.n_rejected} above the recipe's reject_uv ({self.recipe.reject_uv:g} µV)"]
                if self.n_rejected
                else []
            )
            why += [f"{self.n_bad_annotation} overlapping BAD… annotations"] if self.n_bad_annotation else []
            why += [f"{len(self.skipped)} recording(s) skipped as bad files"] if self.skipped else []
            raise DataFileError(
                f"prepare {self.card.name}: every window of the {len(self.sources)} recording(s) read was rejected "
                f"({'; '.join(why) or 'none kept'}); the store {self.out} was not created. Raise reject_uv in the card "
                "(or null to keep all), or check the recordings' units"
            )
        resolved = self.card.resolve_split_over_kept(self.tname, {*self.dropped, *self.skipped})
        if resolved and isinstance(self.writer, ShardSetWriter):
            logger.warning(
                "card %s: its split counts only the recordings kept; a shard set records the split of every "
                "recording listed (%d left out here)",
                self.card.name,
                len(self.dropped) + len(self.skipped),
            )
        if isinstance(self.writer, PatchStoreWriter):  # a single store (shards: a ShardSetWriter)
            if resolved:
                self.writer.set_attrs(card_body=self.card.raw)
            self.writer.set_attrs(
                sources=self.sources,
                n_rejected=self.n_rejected,
                dropped=self.dropped,
                n_bad_annotation=self.n_bad_annotation,
                **dups,
                **({"skipped": self.skipped} if self.skipped else {}),  # (a store without skips stays as it was)
            )
            return self.writer.close(), self.writer.n
        if not self.skipped:  # a resumed set whose skipped recordings were written this time
            self.writer.index.pop("skipped", None)
        return self.writer.close(**dups, **({"skipped": self.skipped} if self.skipped else {})), self.writer.n

    def abort(self) -> None:
        """Discard a single store being written (a shard set keeps its finished shards)."""
        if isinstance(self.writer, PatchStoreWriter):  # a single store (shards: a ShardSetWriter)
            self.writer.abort()


def _count_above(x: np.ndarray, limit: float) -> int:
    """Values of ``x`` with ``|v| > limit``."""
    return int(np.count_nonzero(np.abs(x) > limit))


def _sha256(path) -> str:
    """SHA-256 of a source file, hashed once per file version (archives hold many recordings)."""
    st = Path(path).stat()
    return _sha256_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    from neurokit._utils.hashing import file_sha256

    return file_sha256(path)


@dataclass
class StreamedPart:
    """The windows of a streamed recording (:mod:`neurokit.preprocessing.eeg.stream`) in a part store on disk.

    ``prepare`` copies them into its output batch by batch, then deletes the part store.

    Attributes
    ----------
    path : str
        The part store.
    ch_names : list of str
        Its channels.
    n_rejected : int
        Windows dropped by the amplitude bound.
    sample_shape : tuple of int
        Shape of one window (channels, patches, patch length).
    """

    path: str
    ch_names: list
    n_rejected: int
    sample_shape: tuple


def _batches(w, batch: int = 256):
    """``(patches, labels, onsets)`` batches of a :class:`Windows` (one batch) or a :class:`StreamedPart`."""
    if not isinstance(w, StreamedPart):
        yield w.patches, w.labels, w.onsets
        return
    from neurokit.store.patch_store import PatchStore

    st = PatchStore(w.path, validate=False)  # a streamed recording's own part, written by prepare a moment ago
    try:
        for i in range(0, len(st), batch):
            sl = slice(i, min(len(st), i + batch))
            yield st.patches(sl), st.labels[sl], st.meta["onset"][sl]
    finally:
        st.close()


def _eeg_file(
    path,
    recipe,
    read_opts: dict,
    *,
    member: str = "",
    reader: str = "",
    part_dir: str = "",
    stream_above: float | None = None,
    sha256: str = "",
):
    """One recording → (:class:`~neurokit.preprocessing.eeg.windows.Windows`, its ``sources`` entry, the
    :func:`~neurokit.preprocessing.duplicates.signal_fingerprint` of its samples as read: channels selected, before
    any filter). Warnings are left to the caller (:func:`_eeg_job` collects them); any fault that is not already
    a neurokit error becomes a :class:`DataFileError` naming the file. With ``part_dir``, a recording above ``stream_above``
    bytes as float64 samples (default :data:`~neurokit.preprocessing.eeg.windows.stream.STREAM_ABOVE_BYTES`) is
    streamed in bounded memory into a part store there, returned as a :class:`StreamedPart`."""
    from neurokit._utils.errors import NeurokitError
    from neurokit.io.bids import read_bids_eeg
    from neurokit.datasets.registry import get_reader
    from neurokit.io.eeg import describe_exception, read_eeg
    from neurokit.io.entry import FileEntry
    from neurokit.preprocessing.duplicates import SignalAccumulator
    from neurokit.preprocessing.eeg.eog import read_options as eog_read_options
    from neurokit.preprocessing.eeg.stream import STREAM_ABOVE_BYTES, streamable
    from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw

    try:
        if reader == "bids":  # a BIDS recording: events.tsv, channels.tsv through mne-bids
            raw = read_bids_eeg(path, **read_opts)
        elif reader:  # a dataset reader of neurokit.datasets (neurokit.datasets.registry names them)
            entry = FileEntry(path=Path(path), subject="", member=member, reader=reader)
            raw = get_reader(reader).read_entry(entry, **read_opts)  # an EDF reader takes the reading options
        else:
            raw = read_eeg(path, **{**read_opts, **eog_read_options(recipe)})  # EOG channels kept for eog_removal
        limit = STREAM_ABOVE_BYTES if stream_above is None else stream_above
        samples = SignalAccumulator(raw.n_times, raw.info["sfreq"])  # sees the samples as they are read
        if part_dir and streamable(raw, recipe, limit):
            w, applied, n_windows = _stream_part(raw, recipe, Path(part_dir), str(path), samples.add)
        else:
            raw = preprocess_raw(raw, recipe, source=str(path), fft_dtype=PREPARE_FFT_DTYPE, on_samples=samples.add)
            w = make_windows(raw, recipe, source=str(path))
            applied, n_windows = raw_notes(raw).applied, len(w.labels)
    except (NeurokitError, FileNotFoundError):
        raise
    except Exception as exc:  # a fault of MNE or numpy on this file: name the file
        raise DataFileError(f"{path}: {describe_exception(exc)}") from exc
    ren = raw_notes(raw).renames or ChannelRenames()  # every reader records them; none: nothing renamed
    n_bad = applied.pop("n_bad_annotation", 0) if isinstance(w, StreamedPart) else w.n_bad_annotation
    provenance = {
        "path": str(Path(path).resolve()),
        **({"member": member} if member else {}),
        "sha256": sha256 or _sha256(path),
        "n_windows": int(n_windows),
        "n_rejected": int(w.n_rejected),
        "n_bad_annotation": int(n_bad),
        "renamed": ren.renamed,
        "aliases": ren.aliases,
        "applied": applied,
    }
    return w, provenance, samples.fingerprint()


def _stream_part(raw, recipe, part_dir: Path, source: str, on_samples=None):
    """Stream ``raw`` through the recipe into a part store in ``part_dir``: (StreamedPart, applied, n)."""
    import os
    import uuid

    from neurokit.preprocessing.eeg.stream import scratch_call, stream_windows

    if not part_dir.is_dir():  # removed by a stopped run: do not make it again
        raise ScratchError(f"{part_dir}: the scratch folder is gone (the run was stopped)")
    path = part_dir / f"{os.getpid()}-{uuid.uuid4().hex[:12]}.h5"
    holder: dict = {}

    def write(w):
        if "writer" not in holder:
            holder["writer"] = scratch_call(
                PatchStoreWriter,
                path,
                w.patches.shape[1:],
                meta_columns=(),
                overwrite=True,
                where=path,
                label_dtype="float32" if w.labels.dtype.kind == "f" else "int64",  # regression targets
            )
        scratch_call(holder["writer"].append, w.patches, w.labels, onsets=w.onsets, where=path)
        holder["n"] = holder.get("n", 0) + len(w.labels)

    try:
        applied, ch_names, n_rej = stream_windows(
            raw, recipe, part_dir, write, source=source, make_workdir=False, on_samples=on_samples
        )
        if "writer" not in holder:  # every window rejected: an empty part
            holder["writer"] = scratch_call(
                PatchStoreWriter,
                path,
                (len(ch_names), recipe.n_patches, 200),
                meta_columns=(),
                overwrite=True,
                where=path,
            )
        scratch_call(holder["writer"].close, where=path)
    except BaseException:
        if "writer" in holder:
            holder["writer"].abort()
        raise
    part = StreamedPart(str(path), ch_names, n_rej, (len(ch_names), recipe.n_patches, 200))
    return part, applied, holder.get("n", 0)
