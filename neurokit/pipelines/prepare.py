"""``prepare``: recordings (from a data card or a list of files) → one HDF5 patch store.

Dispatch is by the card's modality: :func:`get_preparer` gives the preparer of ``"eeg"``
(:func:`neurokit.preprocessing.eeg.windows.prepare.prepare_eeg`) and ``"surface"``
(:func:`neurokit.preprocessing.surface.prepare.prepare_surface`), both of the shape
``(card, out, options, modality_options) -> Path`` (:mod:`neurokit.preprocessing.options`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Sequence

from neurokit._utils.disk import is_disk_full
from neurokit._utils.errors import ConfigError, DiskFullError, Interrupted, NeurokitError, StoreError
from neurokit._utils.locks import output_lock
from neurokit._utils.staging import StagedOutput
from neurokit.cards import DataCard, load_card
from neurokit.preprocessing.eeg.prepare import EEG_RECIPE_OPTIONS, eeg_recipe
from neurokit.preprocessing.options import build_options, option_names

logger = logging.getLogger("neurokit")

#: the modalities :func:`prepare` knows
MODALITIES = ("eeg", "surface")


def get_preparer(modality: str) -> Callable[..., Path]:
    """The preparer of ``modality`` (imported on first use: EEG preparation never imports torch).

    Raises
    ------
    ConfigError
        A modality no preparer handles.
    """
    if modality == "eeg":
        from neurokit.preprocessing.eeg.prepare import prepare_eeg

        return prepare_eeg
    if modality == "surface":
        from neurokit.preprocessing.surface.prepare import prepare_surface

        return prepare_surface
    raise ConfigError(f"no preparer for modality {modality!r}; known: {', '.join(MODALITIES)}")


def prepare(
    card: str | Path | DataCard,
    out: str | Path,
    *,
    data_root: str | Path | None = None,
    task: str | None = None,
    files: Sequence[str | Path] | None = None,
    subjects: list[int] | None = None,
    channels: Sequence[str] | str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **kwargs,
) -> Path:
    """Write the patch store of ``card`` (name, path or :class:`DataCard`) to ``out``.

    Parameters
    ----------
    card : str | Path | DataCard
        Data card giving the file layout, events → labels and the preprocessing recipe.
    out : path
        Store to write (``.h5``). Written as ``out.partial`` and renamed when complete. With
        ``shards=True`` (EEG and surface cards; CLI ``--shards``): the folder of a shard set, one store per
        recording (:mod:`neurokit.store.shards`), which ``resume=True`` (``--resume``) completes after a stop.
    data_root : path, optional
        Folder the card's layout is relative to (default ``$NEUROKIT_DATA``).
    task : str, optional
        Card task (labels and splits); default the card's first task.
    files : sequence of paths, optional
        Explicit recordings instead of the card's layout, given the subjects, runs and labels the layout would
        give them (:meth:`~neurokit.cards.DataCard.explicit_files`; a file whose run no run group names is
        refused unless the task has task-level ``events``).
    subjects : list of int, optional
        Restrict to these subject numbers.
    channels : list of str or str, optional
        Keep only these channels, in this order (10-05 labels), or the name of one of the card's
        ``channel_sets``; overrides the recipe's ``channels``.
    overwrite : bool
        Replace an existing store (a store file is renamed into place when complete; a shard set is written
        beside the earlier one and swapped in when complete, so a stopped run leaves the earlier one whole).
    allow_duplicate_recordings : bool, optional (keyword)
        Keep the same recording under different subjects (CLI ``--allow-duplicate-recordings``; recorded in the
        store's ``duplicate_recordings``): identical files (SHA-256), or files whose samples match though their
        bytes differ (an edited header, another format; found as they are read). By default they are refused,
        naming both files, and a file given twice is read once (:mod:`neurokit.preprocessing.duplicates`).
    dtype : {"float32", "float16"}, optional (keyword)
        EEG cards: the dtype the windows are stored in (CLI ``--dtype``). ``"float16"`` halves the store (and
        its reads from disk) at a rounding error near 1e-4 of the signal's RMS (logged for the first recording);
        values beyond ±65504 (6.55 V in 100 µV units) are refused or clipped as the card's
        ``preprocessing: {float16_overflow: refuse | clip}`` says (default refuse), never stored as inf. Readers
        return float32. Default ``"float32"`` (the bytes written before the option existed).
    subject_pattern : str, optional (keyword)
        Folder layouts and ``files``: the regular expression giving subject ids (CLI ``--subject-pattern``;
        replaces the card's ``layout.subject_pattern``; see :func:`neurokit.cards.subject_of`).

    Returns
    -------
    Path of the complete store.

    Raises
    ------
    OutputLockedError
        Another process is preparing into ``out`` (named: pid, host, start time).
    StoreError, DiskFullError
        The disk filled up: the message says what is kept and how to go on.
    """
    card = card if isinstance(card, DataCard) else load_card(card)
    out = Path(out)
    pattern = kwargs.pop("subject_pattern", None)
    if pattern is not None:  # the subject rule of folder layouts and -f files (CLI --subject-pattern)
        layout = dict(card.raw.get("layout") or {})
        if layout.get("kind") not in ("folder", None) and not files:
            raise ConfigError(
                f"subject_pattern= applies to folder layouts and files=; card {card.name!r} has a "
                f"{layout.get('kind')} layout, whose subjects it defines"
            )
        card = DataCard(
            name=card.name,
            raw={**card.raw, "layout": {**layout, "subject_pattern": pattern}},
            path=card.path,
            extra=card.extra,
        )
    if kwargs.get("resume") and not kwargs.get("shards"):
        raise ConfigError("resume=True applies to shard sets (shards=True)")
    if out.is_dir() and not kwargs.get("shards"):
        raise StoreError(f"{out}: is a folder; give the path of the store file to write (e.g. {out / 'store.h5'})")
    if kwargs.get("shards") and out.is_dir() and any(out.iterdir()):
        from neurokit.store.shards import is_shard_set

        if not is_shard_set(out):
            raise StoreError(
                f"{out}: a folder of other files, not a shard set; give a new or empty folder for the "
                "shard set (overwrite=True replaces only a shard set)"
            )
    if out.is_file() and not kwargs.get("shards"):
        from neurokit.store.patch_store import is_store_file

        if not is_store_file(out):  # a user's file: never replaced, not even with overwrite
            raise StoreError(
                f"{out}: exists and is not a neurokit patch store; it is not replaced (not even with overwrite=True): "
                "choose another output path, or move the file away yourself"
            )
    if out.exists() and not overwrite and not kwargs.get("resume"):
        more = "; or resume=True to add the recordings a shard set lacks" if kwargs.get("shards") else ""
        raise FileExistsError(f"{out}: store exists; pass overwrite=True to replace it{more}")
    fn = get_preparer(card.modality)
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if kwargs.get("dtype") == "float32" and card.modality != "eeg":  # the default: nothing to say
        del kwargs["dtype"]
    if channels is not None:
        kwargs["channels"] = channels
    # each preparer takes the options that make sense for its modality; name the others (``mesh=``: the CLI says
    # its option)
    accepted = option_names(card.modality)
    extra = [f"{k}=" for k in kwargs if k not in accepted]
    if extra:
        raise ConfigError(
            f"card {card.name!r} (modality {card.modality}): {', '.join(extra)} does not apply to it; drop it"
        )
    if channels is not None:  # set in kwargs above
        kwargs["channels"] = card.channel_set(channels) if isinstance(channels, str) else list(channels)
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    try:
        with output_lock(out, "prepare"):  # a second prepare into ``out`` is refused while this one runs
            return _prepare_locked(
                fn,
                card,
                out,
                overwrite,
                dict(data_root=data_root, task=task, files=files, subjects=subjects, progress=progress, **kwargs),
            )
    except BaseException as exc:
        for p in made:  # folders this call made for a store it never finished: leave none behind empty
            if p.is_dir() and not any(p.iterdir()):
                p.rmdir()
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            from neurokit.store.shards import is_shard_set, read_index

            if kwargs.get("shards") and is_shard_set(out):
                n = len(read_index(out)["shards"])
                raise Interrupted(
                    f"interrupted: {out}: the {n} recordings written are kept; run the same command "
                    "with resume=True to add the others"
                ) from None
            kept = "the existing store there is unchanged" if out.exists() else "no store written"
            raise Interrupted(f"interrupted: {out}: {kept}; run the same command again") from None
        raise


def _prepare_locked(fn, card: DataCard, out: Path, overwrite: bool, kw: dict) -> Path:
    """Run the preparer ``fn`` into ``out``; a shard set replaced by ``overwrite`` is written beside the earlier
    one and swapped in at the end (:class:`~neurokit._utils.staging.StagedOutput`), so a stopped run leaves
    the earlier set whole (a single store file is replaced by a rename at the end already)."""
    from neurokit.store.shards import is_shard_set

    if not (kw.get("shards") and overwrite and not kw.get("resume") and is_shard_set(out)):
        return fn(card, out, *build_options(card.modality, overwrite=overwrite, **kw))
    stage = StagedOutput(out, replace=True)
    try:
        fn(card, stage.work, *build_options(card.modality, overwrite=False, **kw))
        return stage.commit()
    except BaseException as exc:
        stage.discard()
        kept = f"the earlier shard set in {out} is unchanged (the new one was discarded)"
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted(f"interrupted: {kept}; run the same command again") from None
        if is_disk_full(exc) or isinstance(exc, StoreError) and "disk full" in str(exc):
            raise DiskFullError(
                f"{out}: disk full while writing the new shard set; {kept}. Free space, then run the same command again"
            ) from None
        if isinstance(exc, NeurokitError) and str(stage.work) in str(exc):
            text = str(exc).split("; the ")[0]  # what the new set kept is gone with it
            raise type(exc)(f"{stage.where(text)}; {kept}") from None
        raise


def store_differences(
    path: str | Path,
    card: str | Path | DataCard,
    *,
    data_root=None,
    task: str | None = None,
    subjects: list[int] | None = None,
    channels: Sequence[str] | str | None = None,
    dtype: str = "float32",
    **recipe_overrides,
) -> dict[str, tuple]:
    """How the existing store at ``path`` differs from what :func:`prepare` would write with these
    arguments: data card, task, recipe, channels, units (:func:`~neurokit.models.checkpoint.data_differences`),
    the set of subjects and the sample dtype (``dtype``). Empty when the store can be reused; ``{"store": …}``
    when it is unreadable.
    """
    from neurokit.store.patch_store import PatchStore
    from neurokit.models.checkpoint import data_differences

    card = card if isinstance(card, DataCard) else load_card(card)
    try:
        st = PatchStore(path)
    except (StoreError, FileNotFoundError, OSError) as exc:
        return {"store": (str(path), str(exc))}
    tname, _ = card.task(task)
    want: dict = {"card": card.name, "task": tname}
    if card.modality == "eeg":
        chans = card.channel_set(channels) if isinstance(channels, str) else channels
        recipe = eeg_recipe(card, channels=chans, task=tname, **recipe_overrides)
        want.update(recipe=recipe.to_dict(), units="100 uV")
        if recipe.channels:
            want["ch_names"] = list(recipe.channels)
    diff = data_differences(want, st.attrs, fields=("card", "task", "recipe", "ch_names", "units"))
    if st.sample_dtype != dtype:
        diff["dtype"] = (dtype, st.sample_dtype)
    have = sorted({str(s) for s in st.meta["subject"]})
    files = card.files(data_root, tname, subjects=subjects)
    expect = sorted({e.subject for e in files})
    if have != expect:
        diff["subjects"] = (expect, have)
    if card.modality == "eeg" and any(isinstance(x, dict) and "subject" not in x for x in st.info.sources):
        # written before sources named their subject: the pretraining-overlap check could not tell them apart
        diff["sources"] = ("the subject of each recording", "none recorded")
    return diff


def prepare_or_reuse(
    card: str | Path | DataCard, out: str | Path, *, overwrite: bool = False, **kwargs
) -> tuple[Path, str]:
    """Reuse the store at ``out`` when it holds exactly what :func:`prepare` would write (same card, task,
    recipe, channels, units, subjects and sample dtype: :func:`store_differences`); else (re)build it.

    Returns ``(path, note)``: the note says whether the store was reused, built, or rebuilt and why.
    ``overwrite`` always rebuilds.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        diff = store_differences(
            out,
            card,
            **{
                k: v
                for k, v in kwargs.items()
                if k in ("data_root", "task", "subjects", "channels", "dtype", *EEG_RECIPE_OPTIONS)
            },
        )
        if not diff:
            return out, f"reusing {out} (same card, task, recipe, channels, subjects and dtype)"
        note = f"rebuilt {out}: the existing store differs in {', '.join(diff)}"
    else:
        note = f"rebuilt {out} (overwrite=True)" if out.exists() else f"prepared {out}"
    return prepare(card, out, overwrite=True, **kwargs), note
