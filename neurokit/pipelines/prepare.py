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

from .._errors import ChannelMismatchError, ConfigError, DataFileError, StoreError
from .. import __version__
from ..cards import DataCard, FileEntry, load_card
from ..data.store import PatchStoreWriter
from ._progress import progress_bar

logger = logging.getLogger("neurokit")

PREPARERS: dict[str, Callable[..., Path]] = {}

#: option name → CLI flag, for messages about options a modality does not take
CLI_FLAGS = {"mesh": "--mesh", "hemi": "--hemi", "spheres": "--sphere-l/--sphere-r", "channels": "--channels",
             "skip_bad": "--skip-bad"}


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
    return fn(card, Path(out), data_root=data_root, task=task, files=files, subjects=subjects, overwrite=overwrite, progress=progress, **kwargs)


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
) -> Path:
    """EEG: read → :func:`~neurokit.preprocessing.eeg.preprocess_raw` → windows → store.

    ``skip_bad``: log and skip files that raise :class:`DataFileError` instead of stopping.
    """
    from ..io.bids import read_bids_eeg, read_participants
    from ..io.eeg import file_sha256, read_eeg
    from ..preprocessing.eeg import make_windows, preprocess_raw

    recipe = card.recipe()
    if channels:
        recipe = type(recipe).from_dict({**recipe.to_dict(), "channels": list(channels)})
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
    labelled = any(e.events or e.label is not None for e in entries)
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
                raw = read_bids_eeg(e.path) if e.reader == "bids" else read_eeg(e.path)
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
            if e.label is not None:  # subject-level class (participants.tsv column)
                w.labels[:] = e.label
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
                            "renamed": ren.renamed, "aliases": ren.aliases,
                            "interpolated": list(raw.info["temp"].get("neurokit_interpolated", []))})
        if writer is None:
            raise DataFileError(f"prepare {card.name}: no usable recording (all skipped)")
        writer.set_attrs(sources=sources, n_rejected=n_rej)
        if any(e.reader == "bids" for e in entries):
            # participants.tsv columns, keyed by store subject id: subject-level labels for any task
            table = read_participants(card.bids_root(data_root))
            ids = {e.subject for e in entries}
            writer.set_attrs(participants={card.store_subject(k): v for k, v in table.items() if card.store_subject(k) in ids})
        path = writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    logger.info("wrote %s (%d samples, %d rejected)", path, writer.n, n_rej)
    return path
