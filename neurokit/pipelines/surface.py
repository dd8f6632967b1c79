"""Surface fMRI in the pipelines: the ``"sit"`` pretraining objective (vsMAE) and the ``"surface"`` preparer.

Both register themselves when this module is imported; :mod:`neurokit.pipelines.objectives` and
:mod:`neurokit.pipelines.prepare` import it on first use.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

import torch
import torch.nn as nn

from .._errors import CardError, ConfigError
from ..models.sit import sit_config
from ..models.vsmae import VSMAE, VSMAEConfig
from .objectives import Objective, register_objective
from .prepare import register_preparer

logger = logging.getLogger("neurokit")

_DECODER_KEYS = {"mask_ratio", "decoder_dim", "decoder_depth", "decoder_heads", "decoder_dim_head", "decoder_mlp_dim"}


def build_vsmae(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> VSMAE:
    """vsMAE sized for a surface store's samples ``(T, N, V)``.

    ``kwargs``: ``size`` (``tiny``/``small``/``base``, default tiny), ``mask_ratio`` and the decoder
    fields of :class:`~neurokit.models.vsmae.VSMAEConfig`, ``n_layers`` (alias of ``depth``) and any
    :class:`~neurokit.models.sit.SiTConfig` field.

    Raises
    ------
    ConfigError
        The store is not a surface store of ``(T, N, V)`` samples, or an unknown option.
    """
    if store_attrs.get("modality") != "surface" or len(sample_shape) != 3:
        raise ConfigError(
            f"SiT pretrains on surface stores of (T, n_patches, V) samples; this store is "
            f"{store_attrs.get('modality')!r} with samples {tuple(sample_shape)}"
        )
    kw = dict(kwargs)
    size = kw.pop("size", "tiny")
    if "n_layers" in kw:
        kw["depth"] = kw.pop("n_layers")
    mae = {k: kw.pop(k) for k in list(kw) if k in _DECODER_KEYS}
    T, N, V = (int(s) for s in sample_shape)
    enc = sit_config(size, n_chans=T, n_patches=N, vertices_per_patch=V, **kw)
    return VSMAE(VSMAEConfig(encoder=enc, **mae))


def rebuild_vsmae(model_config: dict) -> VSMAE:
    """The module from a checkpoint's ``model_config`` (:meth:`VSMAEConfig.to_dict`)."""
    return VSMAE(VSMAEConfig.from_dict(dict(model_config)))


def vsmae_loss(module: nn.Module, x: torch.Tensor, generator: torch.Generator | None = None):
    """One batch ``(B, T, N, V)`` → (MSE on masked tokens, ``{"masked_frac": …}``)."""
    # a "cuda" generator drives "cuda:0" tensors: compare device types, not full device names
    gen = generator if generator is not None and generator.device.type == x.device.type else None
    out = module(x, generator=gen)
    return out.loss, {"masked_frac": float(out.mask.float().mean())}


register_objective(
    Objective(
        name="sit",
        modality="surface",
        build=build_vsmae,
        rebuild=rebuild_vsmae,
        loss=vsmae_loss,
        backbone=lambda m: getattr(m, "module", m).encoder,
        # the reference's optimiser (metrics-lab/surface-masked-autoencoders config/SiT/pretraining/smae.yml:
        # AdamW, LR 0.0003, weight_decay 0.01, use_scheduler False; tools/pretraining_fmri.py clips no gradient)
        optim=dict(lr=3e-4, weight_decay=0.01, schedule="constant", clip_grad=0.0),
    )
)


_BIDS = {"subject": r"sub-([A-Za-z0-9]+)", "session": r"ses-([A-Za-z0-9]+)", "run": r"run-([A-Za-z0-9]+)"}


def _entities(path: Path, default_subject: str, default_run: str, patterns: dict | None = None) -> dict[str, str]:
    out = {"subject": default_subject, "session": "", "run": default_run}
    for k, pat in {**_BIDS, **(patterns or {})}.items():
        m = re.search(pat, str(path) if k in (patterns or {}) else path.name)
        if m:
            out[k] = m.group(1)
    return out


_SUFFIXES = re.compile(
    r"([._-](lh|rh|L|R|left|right|hemi-[LR]))?(\.(dtseries|dscalar|dlabel|func|shape|label|surf))?"
    r"(\.(nii|gii|mgh|mgz)(\.gz)?)?$"
)


def subject_from_name(path: Path) -> str:
    """Subject id from a file name without BIDS entities: hemisphere and extension suffixes dropped
    (``100610.lh.mgz`` → ``100610``, ``sub01.L.dscalar.nii`` → ``sub01``)."""
    name = Path(path).name
    return _SUFFIXES.sub("", name) or name


def _resolve(root: Path | None, p) -> Path:
    p = Path(p).expanduser()
    return p if p.is_absolute() or root is None else root / p


@register_preparer("surface")
def prepare_surface(card, out: Path, *, data_root=None, task=None, files=None, subjects=None, overwrite=False,
                    progress=True, spheres: dict | None = None, skip_bad: bool = False,
                    mesh: str | None = None, hemi: str | None = None, shards: bool = False,
                    resume: bool = False) -> Path:
    """Surface fMRI: read → resample to ico6 → z-score → patches → tubelets → store.

    The card's ``preprocessing`` holds the :class:`~neurokit.surface.patching.SurfaceRecipe` fields and
    optional ``spheres: {L: path, R: path}`` (relative to the data root); ``spheres=`` overrides them.
    BIDS entities in file names (``sub-``, ``ses-``, ``run-``) name subject, session and run; the card's
    ``layout.entities`` (``{run: "MOVIE(\\d)"}``: regexes with one group, matched on the path) override them.

    ``skip_bad``: skip files that raise :class:`~neurokit._errors.DataFileError` (with a warning).
    ``mesh``: the data's mesh (``"ico6"``: already on the template, no resampling; ``"fs_LR_59k"``: HCP 7T
    1.6 mm, with the 59k spheres in ``spheres``); default from the vertex count. A name neurokit does not
    know (:data:`~neurokit.io.surface.KNOWN_MESHES`) is taken for a mesh of one's own when ``spheres`` are given. ``hemi``:
    only this hemisphere (``L``/``R``): of CIFTI files, and only the GIFTI/MGH files named for it.
    ``shards``: write ``out`` as a shard set, one store per run (a file, or one hemisphere or frame block
    of it), so that a stop (full disk, bad file, kill) keeps every run written; ``resume`` then adds only
    the runs it lacks (:func:`~neurokit.surface.store.write_surface_store`, :mod:`neurokit.data.shards`).
    """
    from ..cards import resolve_data_root
    from ..surface.patching import SurfaceRecipe
    from ..io.surface import KNOWN_MESHES, normalize_hemi
    from ..surface.store import SurfaceRun, write_surface_store

    hemi = normalize_hemi(hemi) if hemi else None
    pre = dict(card.raw.get("preprocessing") or {})
    card_spheres = pre.pop("spheres", None) or {}
    card_mesh = (card.raw.get("recording") or {}).get("mesh")
    if mesh and card_mesh and mesh != card_mesh and card_spheres:
        # the card's spheres are those of its own mesh: data on another mesh need their own
        logger.info("card %r: its spheres are for mesh %s; not used for --mesh %s", card.name, card_mesh, mesh)
        card_spheres = {}
    if mesh is not None and mesh not in KNOWN_MESHES and not spheres:
        # a mesh of one's own is named freely, but only resamples with its own spheres
        raise ConfigError(
            f"mesh {mesh!r} is not one neurokit knows ({', '.join(KNOWN_MESHES)}); for data on a mesh of your own, "
            "give its registered spheres with it (CLI: --mesh NAME --sphere-l L_SPHERE --sphere-r R_SPHERE)"
        )
    known = set(SurfaceRecipe.__dataclass_fields__)
    unknown = sorted(set(pre) - known)
    if unknown:
        raise CardError(f"card {card.name!r}: unknown surface preprocessing key(s) {unknown}; allowed: {sorted(known)} and spheres")
    recipe = SurfaceRecipe(**pre)
    tname, _ = card.task(task)
    rec = card.raw.get("recording") or {}
    if tname == "clip_retrieval" and not (rec.get("clips") or {}).get("boundaries"):
        raise CardError(
            f"card {card.name!r}: task {tname!r} needs the movie clip boundaries, but recording.clips.boundaries "
            "is empty (null). Fill it in the card as {run: [[onset_s, offset_s], ...]} from the HCP wiki page "
            "'7T Movie watching task clip info, timing, versions shown per individual subject' (V1/V2 stimulus "
            "versions), or use --task pretrain for an unlabelled store"
        )
    pats = (card.raw.get("layout") or {}).get("entities")
    if files:
        entries = [(Path(f), _entities(Path(f), subject_from_name(Path(f)), "", pats)) for f in files]
        root = Path(data_root) if data_root else None
    else:
        root = resolve_data_root(data_root)
        entries = [(e.path, _entities(e.path, e.subject, e.run, pats)) for e in card.files(root, tname)]
    if subjects:
        keep = {str(s) for s in subjects} | {f"{int(s):02d}" for s in subjects} | {f"{int(s):03d}" for s in subjects}
        entries = [(p, m) for p, m in entries if m["subject"] in keep or m["subject"].lstrip("0") in keep]
        if not entries:
            raise CardError(f"card {card.name!r}: no file of subjects {subjects}")
    sph = {k: _resolve(root, v) for k, v in {**card_spheres, **(spheres or {})}.items()} or None
    for h, p in (sph or {}).items():
        if not p.exists() and (hemi is None or h == hemi):
            raise CardError(
                f"card {card.name!r}: registered sphere for hemisphere {h} not found at {p}; put the sphere of the "
                "data's mesh there (card preprocessing.spheres, relative to --data-root) or pass spheres= "
                f"(CLI: --sphere-{h.lower()})"
            )
    if hemi:  # files named for the other hemisphere (lh/rh pairs) are left out, not refused
        from ..io.surface import hemi_from_name

        entries = [(p, m) for p, m in entries if hemi_from_name(p) in (None, hemi)]
        if not entries:
            raise CardError(f"card {card.name!r}: no file of hemisphere {hemi} (--hemi)")
    runs = _task_runs(card, tname, entries, hemi)
    say = (lambda msg: logger.info("%s", msg)) if progress else None
    tr = rec.get("tr_s", rec.get("tr"))
    expected_tr = float(tr) if isinstance(tr, (int, float)) and tr > 0 else None
    return write_surface_store(out, runs, recipe, spheres=sph, card=card.name, overwrite=overwrite, progress=say,
                               attrs={"card_body": card.raw, "task": tname}, mesh=mesh, expected_tr=expected_tr,
                               skip_bad=skip_bad, label_names=card.classes(tname) or None, shards=shards,
                               resume=resume)


def _task_runs(card, tname: str, entries, hemi: str | None) -> list:
    """The :class:`~neurokit.surface.store.SurfaceRun` list of a card task.

    A task may label every sample by its hemisphere (``label_by_hemi: {L: class, R: class}``; a file holding
    both hemispheres gives one run per hemisphere) and cut each file into frame blocks
    (``frame_blocks: [[start, stop], ...]``, frames): block ``k`` becomes run ``<run>b<k>``, so a one-subject
    store splits train / val / test by block (the last two blocks are validation and test).
    """
    from ..io.surface import hemi_from_name
    from ..surface.store import SurfaceRun

    _, t = card.task(tname)
    classes = card.classes(tname)
    by_hemi = t.get("label_by_hemi")
    blocks = t.get("frame_blocks")
    if by_hemi is not None:
        if not isinstance(by_hemi, dict) or any(c not in classes for c in by_hemi.values()):
            raise CardError(f"card {card.name!r} task {tname!r}: label_by_hemi must map L/R to classes {classes}")
    elif classes:
        raise CardError(f"card {card.name!r} task {tname!r}: classes {classes} but no way to label the samples "
                        "(label_by_hemi)")
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
                runs.append(SurfaceRun(p, m["subject"], m["session"], run, hemi=h, label=label,
                                       frames=tuple(frames) if frames else None))
    return runs
