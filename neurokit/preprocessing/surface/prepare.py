"""Surface preparer: a card's cortical-surface runs through its :class:`~neurokit.cards.recipes.SurfaceRecipe`
into one HDF5 patch store or a shard set (same shape as the EEG preparer)."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from neurokit._utils.errors import CardError, ConfigError
from neurokit.preprocessing.duplicates import SignalDuplicates, unique_recordings
from neurokit.preprocessing.options import PrepareOptions, SurfaceOptions

logger = logging.getLogger("neurokit")

_BIDS = {"subject": r"sub-([A-Za-z0-9]+)", "session": r"ses-([A-Za-z0-9]+)", "run": r"run-([A-Za-z0-9]+)"}


def _entities(path: Path, default_subject: str, default_run: str, patterns: dict | None = None) -> dict[str, str]:
    # a run named after its file: the two hemisphere files of one scan (lh.x.mgz, rh.x.mgz) are one run, whose
    # frames are held out together
    run = _HEMI_PREFIX.sub("", _SUFFIXES.sub("", str(default_run))) or str(default_run)
    out = {"subject": default_subject, "session": "", "run": run}
    for k, pat in {**_BIDS, **(patterns or {})}.items():
        m = re.search(pat, str(path) if k in (patterns or {}) else path.name)
        if m:
            out[k] = m.group(1)
    return out


_SUFFIXES = re.compile(
    r"([._-](lh|rh|L|R|left|right|hemi-[LR]))?(\.(dtseries|dscalar|dlabel|func|shape|label|surf))?"
    r"(\.(nii|gii|mgh|mgz)(\.gz)?)?$"
)


_HEMI_PREFIX = re.compile(r"^(lh|rh)\.")


def subject_from_name(path: Path) -> str:
    """Subject id from a file name without BIDS entities: hemisphere and extension suffixes dropped.

    Parameters
    ----------
    path : Path
        A surface data file (only its name is read).

    Returns
    -------
    str
        The name without its hemisphere and extension suffixes (the whole name when nothing is left).

    Examples
    --------
    >>> subject_from_name(Path("100610.lh.mgz")), subject_from_name(Path("sub01.L.dscalar.nii"))
    ('100610', 'sub01')
    """
    name = Path(path).name
    return _SUFFIXES.sub("", name) or name


def _resolve(root: Path | None, p) -> Path:
    p = Path(p).expanduser()
    return p if p.is_absolute() or root is None else root / p


def prepare_surface(
    card, out: Path, options: PrepareOptions | None = None, surface: SurfaceOptions | None = None
) -> Path:
    """Surface fMRI: read → resample to ico6 → z-score → patches → tubelets → store.

    Parameters
    ----------
    card : DataCard
        A surface card: its ``preprocessing`` block is the :class:`~neurokit.cards.recipes.SurfaceRecipe`
        (``card.recipe()``) plus optional ``spheres: {L: path, R: path}`` (relative to the data root).
    out : Path
        Store to write (``.h5``), or the folder of a shard set (``options.shards``).
    options : PrepareOptions, optional
        What to prepare (task, files, subjects, data root) and how (overwrite, progress, skip_bad, shards,
        resume). ``n_jobs`` and ``scheduler`` do not apply: runs are written in this process.
    surface : SurfaceOptions, optional
        ``spheres`` (override the card's), ``mesh`` and ``hemi``.

    Returns
    -------
    Path
        The complete store (or shard-set folder).

    Raises
    ------
    ConfigError
        A mesh neurokit does not know, given without its spheres.
    CardError
        A bad ``preprocessing`` block, a task without what it needs (clip boundaries, a way to label), no file
        of the subjects or hemisphere asked for, a sphere file that is missing.
    DataFileError, StoreError, FileExistsError
        As :func:`~neurokit.preprocessing.surface.store.write_surface_store`.

    Notes
    -----
    BIDS entities in file names (``sub-``, ``ses-``, ``run-``) name subject, session and run; the card's
    ``layout.entities`` (``{run: "MOVIE(\\d)"}``: regexes with one group, matched on the path) override them.
    ``skip_bad``: skip files that raise :class:`~neurokit._utils.errors.DataFileError` (with a warning).
    ``mesh``: the data's mesh (``"ico6"``: already on the template, no resampling; ``"fs_LR_59k"``: HCP 7T
    1.6 mm, with the 59k spheres in ``spheres``); default from the vertex count. A name neurokit does not
    know (:data:`~neurokit.io.surface.KNOWN_MESHES`) is taken for a mesh of one's own when ``spheres`` are given. ``hemi``:
    only this hemisphere (``L``/``R``): of CIFTI files, and only the GIFTI/MGH files named for it.
    ``shards``: write ``out`` as a shard set, one store per run (a file, or one hemisphere or frame block
    of it), so that a stop (full disk, bad file, kill) keeps every run written; ``resume`` then adds only
    the runs it lacks (:func:`~neurokit.preprocessing.surface.store.write_surface_store`, :mod:`neurokit.store.shards`).

    Examples
    --------
    >>> from neurokit.cards import load_card
    >>> from neurokit.preprocessing.options import build_options
    >>> options, surface = build_options("surface", data_root="data/sim", mesh="fs_LR_32k")
    >>> prepare_surface(load_card("simulated_movie"), Path("movie.h5"), options, surface)  # doctest: +SKIP
    PosixPath('movie.h5')
    """
    from neurokit._utils.memory import keep_heap_top
    from neurokit.io.surface import normalize_hemi
    from neurokit.preprocessing.surface.store import (
        SurfaceStoreOptions,
        write_surface_store,
    )

    keep_heap_top()  # each run reuses the last one's freed pages (neurokit._utils.memory)
    options, surface = options or PrepareOptions(), surface or SurfaceOptions()
    hemi = normalize_hemi(surface.hemi) if surface.hemi else None
    card_spheres = _card_spheres(card, surface)
    recipe = card.recipe()
    tname, _ = card.task(options.task)
    _check_task(card, tname)
    root, entries = _surface_entries(card, tname, options)
    entries, duplicates, _ = unique_recordings(
        entries, lambda pm: (pm[0], "", pm[1]["subject"]), allow_duplicates=options.allow_duplicate_recordings
    )
    spheres = _spheres(card, root, {**card_spheres, **(surface.spheres or {})}, hemi)
    if hemi:  # files named for the other hemisphere (lh/rh pairs) are left out, not refused
        from neurokit.io.surface import hemi_from_name

        entries = [(p, m) for p, m in entries if hemi_from_name(p) in (None, hemi)]
        if not entries:
            raise CardError(f"card {card.name!r}: no file of hemisphere {hemi} (hemi={hemi!r})")
    runs = _task_runs(card, tname, entries, hemi)
    tr = card.recording().get("tr_s", card.recording().get("tr"))
    store = SurfaceStoreOptions(
        spheres=spheres,
        card=card.name,
        overwrite=options.overwrite,
        progress=(lambda msg: logger.info("%s", msg)) if options.progress else None,
        attrs={"card_body": card.raw, "task": tname, **({"duplicate_recordings": duplicates} if duplicates else {})},
        # runs compared by their samples as they are read (copies whose bytes differ: another format, header)
        signals=SignalDuplicates(options.allow_duplicate_recordings, duplicates, rows="vertices", times="frames"),
        mesh=surface.mesh,
        expected_tr=float(tr) if isinstance(tr, (int, float)) and tr > 0 else None,
        skip_bad=options.skip_bad,
        label_names=card.classes(tname) or None,
        shards=options.shards,
        resume=options.resume,
    )
    return write_surface_store(out, runs, recipe, store)


def _card_spheres(card, surface: SurfaceOptions) -> dict[str, str]:
    """The card's spheres that apply to ``surface.mesh`` (none when the data are on another mesh than the
    card's).

    Raises
    ------
    ConfigError
        ``surface.mesh`` is not one neurokit knows and no spheres are given for it.
    """
    from neurokit.io.surface import KNOWN_MESHES

    mesh = surface.mesh
    card_spheres = card.spheres()
    card_mesh = card.recording().get("mesh")
    if mesh and card_mesh and mesh != card_mesh and card_spheres:
        # the card's spheres are those of its own mesh: data on another mesh need their own
        logger.info("card %r: its spheres are for mesh %s; not used for mesh=%s", card.name, card_mesh, mesh)
        card_spheres = {}
    if mesh is not None and mesh not in KNOWN_MESHES and not surface.spheres:
        # a mesh of one's own is named freely, but only resamples with its own spheres
        raise ConfigError(
            f"mesh {mesh!r} is not one neurokit knows ({', '.join(KNOWN_MESHES)}); for data on a mesh of your own, "
            "give its registered spheres with it (mesh=NAME with spheres=)"
        )
    return card_spheres


def _check_task(card, tname: str) -> None:
    """Refuse a task the card cannot label: ``clip_retrieval`` without the movie clip boundaries."""
    if tname == "clip_retrieval" and not (card.recording().get("clips") or {}).get("boundaries"):
        raise CardError(
            f"card {card.name!r}: task {tname!r} needs the movie clip boundaries, but recording.clips.boundaries "
            "is empty (null). Fill it in the card as {run: [[onset_s, offset_s], ...]} from the HCP wiki page "
            "'7T Movie watching task clip info, timing, versions shown per individual subject' (V1/V2 stimulus "
            "versions), or use task='pretrain' for an unlabelled store"
        )


def _surface_entries(card, tname: str, options: PrepareOptions) -> tuple[Path | None, list[tuple[Path, dict]]]:
    """``(data root, [(file, {subject, session, run}), …])``: ``options.files`` or the card's layout, only
    ``options.subjects`` (matched with or without leading zeros).

    Raises
    ------
    CardError
        No file of the subjects asked for.
    """
    from neurokit.cards import resolve_data_root

    pats = (card.raw.get("layout") or {}).get("entities")
    if options.files:
        files = [Path(f) for f in options.files]
        entries = [(f, _entities(f, subject_from_name(f), "", pats)) for f in files]
        root = Path(options.data_root) if options.data_root else None
    else:
        root = resolve_data_root(options.data_root)
        entries = [(e.path, _entities(e.path, e.subject, e.run, pats)) for e in card.files(root, tname)]
    subjects = options.subjects
    if subjects:
        keep = {str(s) for s in subjects} | {f"{int(s):02d}" for s in subjects} | {f"{int(s):03d}" for s in subjects}
        entries = [(p, m) for p, m in entries if m["subject"] in keep or m["subject"].lstrip("0") in keep]
        if not entries:
            raise CardError(f"card {card.name!r}: no file of subjects {subjects}")
    return root, entries


def _spheres(card, root: Path | None, given: dict, hemi: str | None) -> dict[str, Path] | None:
    """Sphere paths (relative ones under ``root``); ``None`` when none is given.

    Raises
    ------
    CardError
        The sphere of a hemisphere to prepare is not found (naming the path and how to give it).
    """
    sph = {k: _resolve(root, v) for k, v in given.items()} or None
    for h, p in (sph or {}).items():
        if not p.exists() and (hemi is None or h == hemi):
            raise CardError(
                f"card {card.name!r}: registered sphere for hemisphere {h} not found at {p}; put the sphere of the "
                "data's mesh there (card preprocessing.spheres, relative to data_root=) or pass spheres="
            )
    return sph


def _task_runs(card, tname: str, entries, hemi: str | None) -> list:
    """The :class:`~neurokit.preprocessing.surface.store.SurfaceRun` list of a card task.

    A task may label every sample by its hemisphere (``label_by_hemi: {L: class, R: class}``; a file holding
    both hemispheres gives one run per hemisphere) and cut each file into frame blocks
    (``frame_blocks: [[start, stop], ...]``, frames): block ``k`` becomes run ``<run>b<k>``, so a one-subject
    store splits train / val / test by block (the last two blocks are validation and test).
    """
    from neurokit.io.surface import hemi_from_name
    from neurokit.preprocessing.surface.store import SurfaceRun

    _, t = card.task(tname)
    classes = card.classes(tname)
    by_hemi = t.get("label_by_hemi")
    blocks = t.get("frame_blocks")
    if by_hemi is not None:
        if not isinstance(by_hemi, dict) or any(c not in classes for c in by_hemi.values()):
            raise CardError(f"card {card.name!r} task {tname!r}: label_by_hemi must map L/R to classes {classes}")
    elif classes:
        raise CardError(
            f"card {card.name!r} task {tname!r}: classes {classes} but no way to label the samples (label_by_hemi)"
        )
    if blocks is not None and not (isinstance(blocks, list) and all(len(b) == 2 for b in blocks)):
        raise CardError(f"card {card.name!r} task {tname!r}: frame_blocks must be a list of [start, stop] frame ranges")
    runs = []
    for p, m in entries:
        named = hemi or hemi_from_name(p)
        hemis = [named] if named or by_hemi is None else sorted(by_hemi)
        for h in hemis:
            label = classes.index(by_hemi[h]) if by_hemi is not None and h in by_hemi else None
            for k, frames in enumerate(blocks or [None], start=1):
                run = f"{m['run']}b{k}" if blocks else m["run"]
                runs.append(
                    SurfaceRun(
                        p,
                        m["subject"],
                        m["session"],
                        run,
                        hemi=h,
                        label=label,
                        frames=tuple(frames) if frames else None,
                    )
                )
    return runs
