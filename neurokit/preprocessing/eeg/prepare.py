"""EEG preparer: a card's recordings (or a list of files) through the card's :class:`~neurokit.cards.recipes.EEGRecipe`
into one HDF5 patch store or a shard set, in parallel (processes or a Dask cluster), streaming long recordings."""
from __future__ import annotations

import functools
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from neurokit._utils.errors import (
    ChannelMismatchError,
    ConfigError,
    DataFileError,
    ScratchError,
    StoreError,
)
from neurokit._utils.progress import progress_bar
from neurokit._utils.version import VERSION as __version__
from neurokit.cards import DataCard
from neurokit.io.entry import FileEntry
from neurokit.io.notes import raw_notes
from neurokit.io.store import PatchStoreWriter

logger = logging.getLogger("neurokit")



#: recipe fields of an EEG card that ``prepare`` (CLI: the flags above) may override
EEG_RECIPE_OPTIONS = ("window_s", "crop_start_s", "crop_end_s", "line_freq", "min_duration_s")


def eeg_recipe(card: DataCard, *, channels: Sequence[str] | None = None, **overrides):
    """The :class:`~neurokit.cards.recipes.EEGRecipe` a store of ``card`` is prepared with: the card's,
    with ``channels`` and the non-``None`` ``overrides`` (:data:`EEG_RECIPE_OPTIONS`) applied."""
    recipe = card.recipe()
    bad = sorted(set(overrides) - set(EEG_RECIPE_OPTIONS))
    if bad:
        raise ConfigError(f"recipe options {bad} cannot be overridden; allowed: {list(EEG_RECIPE_OPTIONS)}")
    upd = {k: v for k, v in overrides.items() if v is not None}
    if upd.get("line_freq") == 0:
        upd["line_freq"] = None
    if channels:
        upd["channels"] = list(channels)
    return type(recipe).from_dict({**recipe.to_dict(), **upd}) if upd else recipe


def _eeg_job(job: tuple[str, dict, dict]) -> dict:
    """One recording → windows (runs in a worker process or on a Dask worker; module level to pickle).

    Returns ``{"windows", "source", "warnings"}``; ``{"dropped", "warnings"}`` for a recording the recipe
    drops by rule; ``{"error", "warnings"}`` for a file that raises :class:`DataFileError` /
    :class:`ChannelMismatchError` (the caller decides to skip or stop)."""
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.preprocessing.eeg.windows import RecordingDropped

    path, recipe, read_opts = job[0], EEGRecipe.from_dict(job[1]), job[2]
    member, reader = (job[3], job[4]) if len(job) > 3 else ("", "")
    part_dir, stream_above = (job[5], job[6]) if len(job) > 5 else ("", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            w, source = _eeg_file(path, recipe, read_opts, member=member, reader=reader, part_dir=part_dir,
                                  stream_above=stream_above)
        except RecordingDropped as exc:
            return {"dropped": str(exc), "warnings": [str(c.message) for c in caught]}
        except ScratchError as exc:  # the output's disk, not the recording: never skipped as a bad file
            return {"fatal": exc, "warnings": [str(c.message) for c in caught]}
        except (DataFileError, ChannelMismatchError) as exc:
            return {"error": exc, "warnings": [str(c.message) for c in caught]}
    return {"windows": w, "source": source, "warnings": [str(c.message) for c in caught]}


def prepare_eeg(
    card: DataCard,
    out: Path,
    *,
    data_root=None,
    task=None,
    files=None,
    subjects=None,
    overwrite=False,
    progress=True,
    channels: list[str] | None = None,
    skip_bad: bool = False,
    window_s: float | None = None,
    crop_start_s: float | None = None,
    crop_end_s: float | None = None,
    line_freq: float | None = None,
    min_duration_s: float | None = None,
    encoding: str | None = None,
    units: str | None = None,
    n_jobs: int = 1,
    scheduler: str | None = None,
    shards: bool = False,
    resume: bool = False,
    stream_above_mb: float | None = None,
) -> Path:
    """EEG: read → :func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` → windows → store.

    ``window_s``, ``crop_start_s``, ``crop_end_s``, ``min_duration_s`` (s) and ``line_freq`` (Hz; 0 = no
    notch) override the card's recipe (:class:`~neurokit.cards.recipes.EEGRecipe`); the store records
    the recipe used.
    ``skip_bad``: log and skip files that raise :class:`DataFileError` instead of stopping (any reader
    fault becomes one, naming the file). Recordings the recipe drops by rule (``min_duration_s``) are
    always skipped, and listed in the store's ``dropped`` attribute. ``encoding`` / ``units`` override the
    card's ``reading`` block (see :func:`~neurokit.io.read_eeg`). Each entry of the store's ``sources``
    records what was applied to that file (``applied``: original ``sfreq``, band edges used, notch,
    resampling, channels dropped as bad, assumed units, encoding, gaps).
    ``n_jobs``: recordings processed by this many local worker processes (joblib; -1: every core);
    ``scheduler``: a Dask scheduler address (default ``$DASK_SCHEDULER_ADDRESS``) to send them to instead
    (:mod:`neurokit._utils.parallel`). Windows are written in file order, so the store's bytes do not
    depend on either. ``shards``: write ``out`` as a shard set (a folder, one store per recording and an
    index: :mod:`neurokit.io.shards`), which keeps every finished recording when the run stops (full disk,
    kill); ``resume`` then adds only the recordings it lacks.
    ``stream_above_mb``: recordings larger than this (MiB of float64 samples; default 256) are processed in
    bounded memory, chunk by chunk through scratch files beside ``out`` (:mod:`neurokit.preprocessing.eeg.stream`;
    same windows to float64 rounding). Not with a Dask scheduler, whose workers may not share the disk.
    """
    import errno

    import numpy as np

    from neurokit._utils.parallel import map_ordered, scheduler_address
    from neurokit.io.shards import (
        ShardSetWriter,
        disk_full,
        disk_full_error,
        is_shard_set,
        read_index,
        recording_key,
    )

    recipe = eeg_recipe(card, channels=channels, window_s=window_s, crop_start_s=crop_start_s,
                        crop_end_s=crop_end_s, line_freq=line_freq, min_duration_s=min_duration_s)
    read_opts = card.read_options()
    read_opts.update({k: v for k, v in (("encoding", encoding), ("units", units)) if v is not None})
    tname, tdef = card.task(task)
    if files:
        groups = tdef.get("run_groups") or []
        classes = card.classes(tname)
        events = None
        if len(groups) == 1 and classes:
            events = {str(d): classes.index(lbl) for d, lbl in groups[0]["events"].items()}
        entries = [FileEntry(path=Path(f), subject=Path(f).stem, run=Path(f).stem, events=events) for f in files]
    else:
        entries = card.files(data_root, tname, subjects=subjects)
    labelled = any(e.events or e.label is not None for e in entries)
    done = set()
    if shards and is_shard_set(out) and not overwrite:
        if not resume:
            raise FileExistsError(f"{out}: a shard set is there; --resume adds the recordings it lacks, --overwrite "
                                  "starts again")
        done = {sh["key"] for sh in read_index(out)["shards"]}
    todo = [e for e in entries if recording_key(e.path, e.member) not in done]
    # long recordings are streamed into part stores beside the output (local workers share its disk)
    part_dir = "" if scheduler_address(scheduler) else str(out.parent / f".{out.name}.parts")
    if stream_above_mb is not None and not (stream_above_mb >= 0):  # NaN fails this too
        raise ConfigError(f"stream_above_mb (--stream-above) is a size in MiB ≥ 0 (inf: never stream), got {stream_above_mb}")
    if part_dir and todo:
        try:  # made here, not by the workers: a stop removes it and a late worker cannot make it again
            Path(part_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ScratchError(f"{out.parent}: cannot write beside the output ({exc.strerror or exc})",
                               errno=exc.errno) from exc
    jobs = [(str(e.path), (recipe if e.events is None else type(recipe).from_dict({**recipe.to_dict(), "events": e.events})).to_dict(),
             read_opts, e.member, e.reader, part_dir, stream_above_mb * 2**20 if stream_above_mb is not None else None)
            for e in todo]
    writer = None
    closers = []
    sources = []
    dropped = []
    n_rej = 0
    ch_names = None
    try:
        results = map_ordered(_eeg_job, jobs, n_jobs=n_jobs, scheduler=scheduler)
        closers.append(results.close)
        for e, res in progress_bar(zip(todo, results), description=f"prepare {card.name}", enabled=progress,
                                   total=len(todo)):
            for msg in res["warnings"]:
                logger.warning("%s", msg)
            if "dropped" in res:
                logger.warning("%s", res["dropped"])
                dropped.append(str(e.path))
                continue
            if "fatal" in res:
                exc = res["fatal"]
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    if shards:
                        kept = (writer.kept() if writer is not None else
                                f"the {len(done)} recordings already in the set are kept" if done else
                                "no recording was written yet")
                        raise StoreError(f"{out}: disk full while processing {e.path}; {kept}. Free space, then "
                                         "rerun the same command with --resume") from exc
                    raise disk_full_error(out, e.path) from exc
                raise exc
            if "error" in res:
                if skip_bad:
                    logger.warning("skipping %s", res["error"])
                    continue
                raise writer.stopped(res["error"]) if shards and writer is not None else res["error"]
            w = res["windows"]
            if ch_names is None:
                ch_names = w.ch_names
            elif w.ch_names != ch_names:
                raise DataFileError(
                    f"{e.path}: channels {w.ch_names[:5]}… ({len(w.ch_names)}) differ from the store's "
                    f"{ch_names[:5]}… ({len(ch_names)}); give the card a 'channels' list to fix one montage"
                )
            shape = w.sample_shape if isinstance(w, StreamedPart) else w.patches.shape[1:]
            if writer is None:
                attrs = dict(
                    modality="eeg",
                    card=card.name,
                    card_body=card.raw,
                    task=tname,
                    label_names=card.classes(tname),
                    ch_names=w.ch_names,
                    sfreq=recipe.sfreq,
                    patch_size=200,
                    units="100 uV",
                    recipe=recipe.to_dict(),
                    neurokit_version=__version__,
                )
                if any(x.reader == "bids" for x in entries):
                    # participants.tsv columns, keyed by store subject id: subject-level labels for any task
                    from neurokit.io.bids import read_participants

                    ids = {x.subject for x in entries}
                    table = read_participants(card.bids_root(data_root))
                    attrs["participants"] = {card.store_subject(k): v for k, v in table.items() if card.store_subject(k) in ids}
                if shards:
                    writer = ShardSetWriter(out, shape, attrs=attrs, resume=resume, overwrite=overwrite)
                else:
                    writer = PatchStoreWriter(out, shape, overwrite=overwrite, attrs=attrs)

            def put(target):
                for patches, labels, onsets in _batches(w):
                    if e.label is not None:  # subject-level class (participants.tsv column)
                        labels = np.full(len(labels), e.label, dtype=np.int64)
                    target.append(patches, labels if labelled else None, onsets=onsets, subject=e.subject,
                                  session=e.session, run=e.run)

            try:
                if shards:
                    with writer.shard(recording_key(e.path, e.member), sources=[res["source"]],
                                      n_rejected=int(w.n_rejected)) as sw:
                        put(sw)
                else:
                    put(writer)
                if isinstance(w, StreamedPart):
                    Path(w.path).unlink(missing_ok=True)
            except OSError as exc:  # a shard set says itself what it keeps (a StoreError)
                if not disk_full(exc):
                    raise
                raise disk_full_error(out, e.path) from exc
            n_rej += w.n_rejected
            sources.append(res["source"])
        if writer is None and done:  # every recording was already in the set: mark it finished
            writer = ShardSetWriter(out, (), attrs=read_index(out)["attrs"], resume=True)
        if writer is None:
            why = f" ({len(dropped)} dropped by the recipe's min_duration_s)" if dropped else ""
            raise DataFileError(f"prepare {card.name}: no usable recording (all skipped{why})")
        if not shards:
            writer.set_attrs(sources=sources, n_rejected=n_rej, dropped=dropped)
        path = writer.close()
        n_total = writer.n
    except BaseException:
        if writer is not None and not shards:
            writer.abort()
        raise
    finally:
        for close in closers:  # stop the workers first (joblib cancels what is queued, ends what runs)
            close()
        if part_dir and Path(part_dir).is_dir():  # parts of recordings not copied (a stop) are not kept
            import shutil

            shutil.rmtree(part_dir, ignore_errors=True)
    logger.info("wrote %s (%d samples, %d rejected)", path, n_total, n_rej)
    return path


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
    """The windows of a streamed recording (:mod:`neurokit.preprocessing.eeg.stream`), in a part store on disk
    that ``prepare`` copies into its output batch by batch and then deletes."""

    path: str
    ch_names: list
    n_rejected: int
    sample_shape: tuple


def _batches(w, batch: int = 256):
    """``(patches, labels, onsets)`` batches of a :class:`Windows` (one batch) or a :class:`StreamedPart`."""
    if not isinstance(w, StreamedPart):
        yield w.patches, w.labels, w.onsets
        return
    from neurokit.io.store import PatchStore

    st = PatchStore(w.path)
    try:
        for i in range(0, len(st), batch):
            sl = slice(i, min(len(st), i + batch))
            yield st.patches(sl), st.labels[sl], st.meta["onset"][sl]
    finally:
        st.close()


def _eeg_file(path, recipe, read_opts: dict, *, member: str = "", reader: str = "", part_dir: str = "",
              stream_above: float | None = None):
    """One recording → (:class:`~neurokit.preprocessing.eeg.windows.Windows`, its ``sources`` entry). Warnings are
    left to the caller (:func:`_eeg_job` collects them); any fault that is not already a neurokit error
    becomes a :class:`DataFileError` naming the file. With ``part_dir``, a recording above ``stream_above``
    bytes as float64 samples (default :data:`~neurokit.preprocessing.eeg.windows.stream.STREAM_ABOVE_BYTES`) is
    streamed in bounded memory into a part store there, returned as a :class:`StreamedPart`."""
    from neurokit._utils.errors import NeurokitError
    from neurokit.io.bids import read_bids_eeg
    from neurokit.io.clinical import get_reader
    from neurokit.io.eeg import describe_exception, read_eeg
    from neurokit.io.entry import FileEntry
    from neurokit.preprocessing.eeg.stream import STREAM_ABOVE_BYTES, streamable
    from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw

    try:
        if reader == "bids":  # a BIDS recording: events.tsv, channels.tsv through mne-bids
            raw = read_bids_eeg(path, **read_opts)
        elif reader:  # a dataset reader of neurokit.io.clinical (Bonn, SMNI, EEGMAT)
            raw = get_reader(reader).read(FileEntry(path=Path(path), subject="", member=member, reader=reader))
        else:
            raw = read_eeg(path, **read_opts)
        limit = STREAM_ABOVE_BYTES if stream_above is None else stream_above
        if part_dir and streamable(raw, recipe, limit):
            w, applied, n_windows = _stream_part(raw, recipe, Path(part_dir), str(path))
        else:
            raw = preprocess_raw(raw, recipe, source=str(path))
            w = make_windows(raw, recipe, source=str(path))
            applied, n_windows = raw_notes(raw).applied, len(w.labels)
    except (NeurokitError, FileNotFoundError):
        raise
    except Exception as exc:  # a fault of MNE or numpy on this file: name the file
        raise DataFileError(f"{path}: {describe_exception(exc)}") from exc
    ren = raw_notes(raw).renames
    provenance = {"path": str(Path(path).resolve()), **({"member": member} if member else {}),
                  "sha256": _sha256(path), "n_windows": int(n_windows),
                  "n_rejected": int(w.n_rejected), "renamed": ren.renamed, "aliases": ren.aliases,
                  "applied": applied}
    return w, provenance


def _stream_part(raw, recipe, part_dir: Path, source: str):
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
            holder["writer"] = scratch_call(PatchStoreWriter, path, w.patches.shape[1:], meta_columns=(), overwrite=True,
                                        where=path)
        scratch_call(holder["writer"].append, w.patches, w.labels, onsets=w.onsets, where=path)
        holder["n"] = holder.get("n", 0) + len(w.labels)

    try:
        applied, ch_names, n_rej = stream_windows(raw, recipe, part_dir, write, source=source, make_workdir=False)
        if "writer" not in holder:  # every window rejected: an empty part
            holder["writer"] = scratch_call(PatchStoreWriter, path, (len(ch_names), recipe.n_patches, 200),
                                        meta_columns=(), overwrite=True, where=path)
        scratch_call(holder["writer"].close, where=path)
    except BaseException:
        if "writer" in holder:
            holder["writer"].abort()
        raise
    part = StreamedPart(str(path), ch_names, n_rej, (len(ch_names), recipe.n_patches, 200))
    return part, applied, holder.get("n", 0)
