"""``prepare``: recordings (from a data card or a list of files) → one HDF5 patch store.

Dispatch is by the card's modality: :data:`PREPARERS` maps ``"eeg"`` (and other modalities that
register themselves) to a function ``(card, out, *, data_root, task, files, overwrite, progress, **kw)
-> Path``.
"""
from __future__ import annotations

import inspect
import logging
import warnings
from pathlib import Path
from typing import Callable, Sequence

from .._errors import ChannelMismatchError, ConfigError, DataFileError, Interrupted, StoreError
from .. import __version__
from ..cards import DataCard, FileEntry, load_card
from ..data.store import PatchStoreWriter
from ._progress import progress_bar

logger = logging.getLogger("neurokit")

PREPARERS: dict[str, Callable[..., Path]] = {}

#: option name → CLI flag, for messages about options a modality does not take
CLI_FLAGS = {"mesh": "--mesh", "hemi": "--hemi", "spheres": "--sphere-l/--sphere-r", "channels": "--channels",
             "skip_bad": "--skip-bad", "window_s": "--window-s", "crop_start_s": "--crop-start",
             "crop_end_s": "--crop-end", "line_freq": "--line-freq"}

#: recipe fields of an EEG card that ``prepare`` (CLI: the flags above) may override
EEG_RECIPE_OPTIONS = ("window_s", "crop_start_s", "crop_end_s", "line_freq")


def register_preparer(modality: str):
    def deco(fn):
        PREPARERS[modality] = fn
        return fn

    return deco


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
        Store to write (``.h5``). Written as ``out.partial`` and renamed when complete.
    data_root : path, optional
        Folder the card's layout is relative to (default ``$NEUROKIT_DATA``).
    task : str, optional
        Card task (labels and splits); default the card's first task.
    files : sequence of paths, optional
        Explicit recordings instead of the card's layout (no labels unless the card's task gives events
        for a single run group).
    subjects : list of int, optional
        Restrict to these subject numbers.
    channels : list of str or str, optional
        Keep only these channels, in this order (10-05 labels), or the name of one of the card's
        ``channel_sets``; overrides the recipe's ``channels``.
    overwrite : bool
        Replace an existing store.

    Returns
    -------
    Path of the complete store.
    """
    card = card if isinstance(card, DataCard) else load_card(card)
    out = Path(out)
    if out.is_dir():
        raise StoreError(f"{out}: is a folder; give the path of the store file to write (e.g. {out / 'store.h5'})")
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out}: store exists; pass overwrite=True (CLI: --overwrite) to replace it")
    from .objectives import _load_plugins

    _load_plugins()
    fn = PREPARERS.get(card.modality)
    if fn is None:
        raise ValueError(f"no preparer for modality {card.modality!r}; known: {sorted(PREPARERS)}")
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if channels is not None:
        kwargs["channels"] = channels
    # each preparer takes the options that make sense for its modality; name the others the CLI's way
    accepted = inspect.signature(fn).parameters
    extra = [CLI_FLAGS.get(k, k) for k in kwargs if k not in accepted]
    if extra:
        raise ConfigError(f"card {card.name!r} (modality {card.modality}): {', '.join(extra)} does not apply to it; drop it")
    if "channels" in kwargs:
        kwargs["channels"] = card.channel_set(channels) if isinstance(channels, str) else list(channels)
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    try:
        return fn(card, Path(out), data_root=data_root, task=task, files=files, subjects=subjects, overwrite=overwrite,
                  progress=progress, **kwargs)
    except BaseException as exc:
        for p in made:  # folders this call made for a store it never finished: leave none behind empty
            if p.is_dir() and not any(p.iterdir()):
                p.rmdir()
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            kept = "the existing store there is unchanged" if out.exists() else "no store written"
            raise Interrupted(f"interrupted: {out}: {kept}; run the same command again") from None
        raise


def eeg_recipe(card: DataCard, *, channels: Sequence[str] | None = None, **overrides):
    """The :class:`~neurokit.preprocessing.eeg.EEGRecipe` a store of ``card`` is prepared with: the card's,
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


@register_preparer("eeg")
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
) -> Path:
    """EEG: read → :func:`~neurokit.preprocessing.eeg.preprocess_raw` → windows → store.

    ``skip_bad``: log and skip files that raise :class:`DataFileError` instead of stopping.
    ``window_s``, ``crop_start_s``, ``crop_end_s`` (s) and ``line_freq`` (Hz; 0 = no notch) override the
    card's recipe (:class:`~neurokit.preprocessing.eeg.EEGRecipe`); the store records the recipe used.
    """
    from ..io.eeg import file_sha256, read_eeg
    from ..preprocessing.eeg import make_windows, preprocess_raw

    recipe = eeg_recipe(card, channels=channels, window_s=window_s, crop_start_s=crop_start_s,
                        crop_end_s=crop_end_s, line_freq=line_freq)
    tname, tdef = card.task(task)
    if files:
        groups = tdef.get("run_groups") or []
        classes = card.classes(tname)
        events = None
        if len(groups) == 1 and classes:
            events = {d: classes.index(lbl) for d, lbl in groups[0]["events"].items()}
        entries = [FileEntry(path=Path(f), subject=Path(f).stem, run=Path(f).stem, events=events) for f in files]
    else:
        entries = card.files(data_root, tname, subjects=subjects)
    labelled = any(e.events for e in entries)
    writer = None
    sources = []
    n_rej = 0
    ch_names = None
    try:
        for e in progress_bar(entries, description=f"prepare {card.name}", enabled=progress):
            file_recipe = recipe
            if e.events is not None:
                file_recipe = type(recipe).from_dict({**recipe.to_dict(), "events": e.events})
            try:
                raw = read_eeg(e.path)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    preprocess_raw(raw, file_recipe, source=str(e.path))
                    w = make_windows(raw, file_recipe, source=str(e.path))
                for c in caught:
                    logger.warning("%s", c.message)
            except (DataFileError, ChannelMismatchError) as exc:
                if skip_bad:
                    logger.warning("skipping %s", exc)
                    continue
                raise
            if ch_names is None:
                ch_names = w.ch_names
            elif w.ch_names != ch_names:
                raise DataFileError(
                    f"{e.path}: channels {w.ch_names[:5]}… ({len(w.ch_names)}) differ from the store's "
                    f"{ch_names[:5]}… ({len(ch_names)}); give the card a 'channels' list to fix one montage"
                )
            if writer is None:
                writer = PatchStoreWriter(
                    out,
                    w.patches.shape[1:],
                    overwrite=overwrite,
                    attrs=dict(
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
                    ),
                )
            writer.append(
                w.patches,
                w.labels if labelled else None,
                onsets=w.onsets,
                subject=e.subject,
                session=e.session,
                run=e.run,
            )
            n_rej += w.n_rejected
            ren = raw.info["temp"]["neurokit_renames"]
            sources.append({"path": str(Path(e.path).resolve()), "sha256": file_sha256(e.path),
                            "n_windows": int(len(w.labels)), "n_rejected": int(w.n_rejected),
                            "renamed": ren.renamed, "aliases": ren.aliases})
        if writer is None:
            raise DataFileError(f"prepare {card.name}: no usable recording (all skipped)")
        writer.set_attrs(sources=sources, n_rejected=n_rej)
        path = writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    logger.info("wrote %s (%d samples, %d rejected)", path, writer.n, n_rej)
    return path


def store_differences(path: str | Path, card: str | Path | DataCard, *, data_root=None, task: str | None = None,
                      subjects: list[int] | None = None, channels: Sequence[str] | str | None = None,
                      **recipe_overrides) -> dict[str, tuple]:
    """How the existing store at ``path`` differs from what :func:`prepare` would write with these
    arguments: data card, task, recipe, channels, units (:func:`~neurokit.pipelines.checkpoint.data_differences`)
    and the set of subjects. Empty when the store can be reused; ``{"store": …}`` when it is unreadable.
    """
    from ..data.store import PatchStore
    from .checkpoint import data_differences

    card = card if isinstance(card, DataCard) else load_card(card)
    try:
        st = PatchStore(path)
    except (StoreError, FileNotFoundError, OSError) as exc:
        return {"store": (str(path), str(exc))}
    tname, _ = card.task(task)
    want: dict = {"card": card.name, "task": tname}
    if card.modality == "eeg":
        chans = card.channel_set(channels) if isinstance(channels, str) else channels
        recipe = eeg_recipe(card, channels=chans, **recipe_overrides)
        want.update(recipe=recipe.to_dict(), units="100 uV")
        if recipe.channels:
            want["ch_names"] = list(recipe.channels)
    diff = data_differences(want, st.attrs, fields=("card", "task", "recipe", "ch_names", "units"))
    have = sorted({str(s) for s in st.meta["subject"]})
    files = card.files(data_root, tname, subjects=subjects)
    expect = sorted({e.subject for e in files})
    if have != expect:
        diff["subjects"] = (expect, have)
    return diff


def prepare_or_reuse(card: str | Path | DataCard, out: str | Path, *, overwrite: bool = False,
                     **kwargs) -> tuple[Path, str]:
    """Reuse the store at ``out`` when it holds exactly what :func:`prepare` would write (same card, task,
    recipe, channels, units and subjects: :func:`store_differences`); else (re)build it.

    Returns ``(path, note)``: the note says whether the store was reused, built, or rebuilt and why.
    ``overwrite`` always rebuilds.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        diff = store_differences(out, card, **{k: v for k, v in kwargs.items() if k in
                                               ("data_root", "task", "subjects", "channels", *EEG_RECIPE_OPTIONS)})
        if not diff:
            return out, f"reusing {out} (same card, task, recipe, channels and subjects)"
        note = f"rebuilt {out}: the existing store differs in {', '.join(diff)}"
    else:
        note = f"rebuilt {out} (--overwrite)" if out.exists() else f"prepared {out}"
    return prepare(card, out, overwrite=True, **kwargs), note
