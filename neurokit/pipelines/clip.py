"""Tri-modal CLIP in the pipelines: fMRI ↔ stimulus pairing and the ``"clip"`` pretraining objective.

``neuro pretrain STORE --model clip --stimuli stim.h5`` trains :class:`~neurokit.models.clip.SurfaceCLIP` on
pairs (fMRI tubelet starting at ``t``, stimulus window starting at ``t − lag_s``) through the same loop,
checkpoints, resume and DDP as the other objectives. The pairing (:func:`pair_samples`) is shared with
retrieval (:mod:`neurokit.pipelines.retrieval`), so training and retrieval see the same samples with the
same normalisation (the store's per-frame z-scoring, nothing else).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn

from .._errors import ConfigError, DataFileError
from ..models.clip import CLIPConfig, SurfaceCLIP
from ..models.sit import sit_config
from .objectives import Objective, register_objective

logger = logging.getLogger("neurokit")

SEGMENTS = ("all", "first_half", "second_half")
#: options of the "clip" objective that choose data, not architecture (kept out of the model config)
DATA_KEYS = ("stimuli", "segments")


@dataclass
class Pairs:
    """fMRI samples matched to stimulus windows.

    ``sample``: index into the fMRI dataset; ``stim``: which stimulus store; ``window``: window index in it;
    ``subject``/``run``/``hemi``: per pair (str arrays); ``onset``: fMRI tubelet onset (s).
    """

    sample: np.ndarray
    stim: np.ndarray
    window: np.ndarray
    subject: np.ndarray
    run: np.ndarray
    hemi: np.ndarray
    onset: np.ndarray

    def __len__(self) -> int:
        return len(self.sample)

    def select(self, keep: np.ndarray) -> "Pairs":
        return Pairs(**{k: getattr(self, k)[keep] for k in self.__dataclass_fields__})


def open_stimuli(stimuli) -> list:
    from ..stimuli.store import StimulusStore

    if stimuli is None or (isinstance(stimuli, (list, tuple)) and not stimuli):
        raise ConfigError("the clip model needs stimulus store(s) from `neuro embed-stimuli` (CLI: --stimuli stim.h5)")
    if isinstance(stimuli, (str, Path, StimulusStore)):
        stimuli = [stimuli]
    out = [s if isinstance(s, StimulusStore) else StimulusStore(s) for s in stimuli]
    runs = [s.run for s in out]
    if len(set(runs)) != len(runs):
        raise ConfigError(f"several stimulus stores for the same run: {[(str(s.path), s.run) for s in out]}")
    dims = {(s.video.shape[1], s.audio.shape[1]) for s in out}
    if len(dims) > 1:
        raise ConfigError(f"stimulus stores with different embedding sizes {sorted(dims)}: embed every movie with the same encoders")
    return out


def in_segment(onsets: np.ndarray, clips, window_s: float, segments: str) -> np.ndarray:
    """Windows entirely inside the first or second half of a clip (``segments``), or all (``"all"``).

    The unseen-segments split of the paper: train on the first half of each clip, test on the second."""
    if segments not in SEGMENTS:
        raise ConfigError(f"segments={segments!r}; allowed: {', '.join(SEGMENTS)} (CLI: --segments)")
    onsets = np.asarray(onsets, dtype=float)
    if segments == "all":
        return np.ones(len(onsets), dtype=bool)
    keep = np.zeros(len(onsets), dtype=bool)
    for lo, hi in clips or [[float(onsets.min()), float(onsets.max() + window_s)]]:
        mid = 0.5 * (lo + hi)
        a, b = (lo, mid) if segments == "first_half" else (mid, hi)
        keep |= (onsets >= a - 1e-6) & (onsets + window_s <= b + 1e-6)
    return keep


def pair_samples(ds, stimuli: Sequence, lag_s: float, *, segments: str = "all", keep_rest: bool = False) -> Pairs:
    """Match every fMRI sample of ``ds`` (a :class:`~neurokit.data.dataset.PatchDataset`) with the window of
    its run's stimulus store that starts ``lag_s`` seconds before the sample's onset.

    Samples whose window would start before the movie are dropped; so are rest windows (unless
    ``keep_rest``) and windows outside ``segments``.

    Raises
    ------
    DataFileError
        The fMRI store states no TR (onsets in frames); an fMRI run without a stimulus store of that run;
        a stimulus shorter than the fMRI run; window onsets (hop) that do not line up with the fMRI onsets.
    """
    attrs = ds.attrs
    src = ", ".join(str(s.path) for s in ds.stores)
    if attrs.get("onset_unit") == "frames" or not np.isfinite(float(attrs.get("tr", float("nan")))):
        raise DataFileError(
            f"{src}: the fMRI store has no TR (its files state none; onsets are frame counts), so frames cannot be "
            "matched to stimulus seconds; write the store from files that state their TR (CIFTI SeriesAxis step, "
            "GIFTI TimeStep)"
        )
    runs = ds.meta("run").astype(str)
    onset = ds.meta("onset").astype(float)
    by_run = {s.run: i for i, s in enumerate(stimuli)}
    missing = sorted(set(runs) - set(by_run))
    if missing:
        raise DataFileError(
            f"fMRI store(s) {src} hold run(s) {missing} but the stimulus store(s) are for run(s) "
            f"{sorted(by_run)} ({', '.join(str(s.path) for s in stimuli)}): fMRI and stimuli come from different runs; "
            f"embed the movie of each run (`neuro embed-stimuli MOVIE --run {missing[0]} -o stim_run{missing[0]}.h5`)"
        )
    stim_i = np.array([by_run[r] for r in runs], dtype=int)
    window = np.full(len(runs), -1)
    keep = np.zeros(len(runs), dtype=bool)
    tr = float(attrs["tr"])
    for si, st in enumerate(stimuli):
        sel = np.flatnonzero(stim_i == si)
        if not len(sel):
            continue
        t0 = onset[sel] - lag_s
        last = float(onset[sel].max())
        if last - lag_s + st.window_s > float(st.attrs.get("duration_s", st.onsets[-1] + st.window_s)) + 1e-3:
            raise DataFileError(
                f"{st.path}: the stimulus ({st.attrs.get('source')}, {st.attrs.get('duration_s'):.1f} s) is shorter "
                f"than fMRI run {st.run!r} of {src}: its tubelet at {last:g} s needs the {st.window_s:g}-s window "
                f"starting at {last - lag_s:g} s (lag {lag_s:g} s); give the full movie of that run, or crop the fMRI"
            )
        valid = t0 >= -1e-6
        idx = st.window_index(t0)
        off_grid = valid & (idx < 0)
        if off_grid.any():
            raise DataFileError(
                f"{st.path}: window onsets every {st.hop_s:g} s do not line up with the fMRI onsets of {src} "
                f"(TR {tr:g} s, lag {lag_s:g} s; e.g. {t0[off_grid][0]:g} s); embed the stimuli with --hop equal to the TR"
            )
        ok = valid & (idx >= 0)
        if not keep_rest:
            ok[ok] &= ~st.rest[idx[ok]]
        if segments != "all":
            ok[ok] &= in_segment(st.onsets[idx[ok]], st.clips, st.window_s, segments)
        window[sel[ok]] = idx[ok]
        keep[sel[ok]] = True
    k = np.flatnonzero(keep)
    return Pairs(sample=k, stim=stim_i[k], window=window[k], subject=ds.meta("subject").astype(str)[k],
                 run=runs[k], hemi=ds.meta("hemi").astype(str)[k], onset=onset[k])


class PairedDataset(torch.utils.data.Dataset):
    """Items ``(x, (video, audio))``: the fMRI tubelet ``(T, N, V)`` float32 and its window's frozen
    embeddings ``(D_video,)``, ``(D_audio,)`` float32."""

    def __init__(self, ds, stimuli: Sequence, pairs: Pairs) -> None:
        self.ds, self.pairs = ds, pairs
        self.video = [torch.from_numpy(np.asarray(s.video, np.float32)) for s in stimuli]
        self.audio = [torch.from_numpy(np.asarray(s.audio, np.float32)) for s in stimuli]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, k: int):
        p = self.pairs
        x, _ = self.ds[int(p.sample[k])]
        s, w = int(p.stim[k]), int(p.window[k])
        return x, (self.video[s][w], self.audio[s][w])


# --------------------------------------------------------------------------------------- objective
def encoder_facts(stimuli: Sequence) -> dict:
    """What the model must know of the stimulus encoders (checked again at retrieval)."""
    a = stimuli[0].attrs
    strip = lambda e: {k: e.get(k) for k in ("name", "pretrained", "weights_sha256", "dim")} if isinstance(e, dict) else {}  # noqa: E731
    return {"video_encoder": strip(a.get("video_encoder")), "audio_encoder": strip(a.get("audio_encoder")),
            "window_s": float(stimuli[0].window_s)}


def build_clip(store_attrs: dict, sample_shape: tuple, kwargs: dict) -> SurfaceCLIP:
    """:class:`SurfaceCLIP` for a surface store's ``(T, N, V)`` samples and the stimulus stores in
    ``kwargs["stimuli"]``.

    ``kwargs``: ``stimuli`` (paths, required), ``segments`` (data choice, not stored in the config),
    ``size`` (SiT preset, default tiny), ``n_layers``, any :class:`~neurokit.models.sit.SiTConfig` field
    (``dim``, ``heads``, ``pool``…), and :class:`~neurokit.models.clip.CLIPConfig` fields (``embed_dim``,
    ``dropout``, ``lag_s``, ``weights``, ``log_scale``).
    """
    if store_attrs.get("modality") != "surface" or len(sample_shape) != 3:
        raise ConfigError(
            f"the clip model trains on surface stores of (T, n_patches, V) samples; this store is "
            f"{store_attrs.get('modality')!r} with samples {tuple(sample_shape)}"
        )
    kw = dict(kwargs)
    stimuli = open_stimuli(kw.pop("stimuli", None))
    kw.pop("segments", None)
    size = kw.pop("size", "tiny")
    if "n_layers" in kw:
        kw["depth"] = kw.pop("n_layers")
    clip_keys = {"embed_dim", "dropout", "lag_s", "weights", "log_scale"}
    ckw = {k: kw.pop(k) for k in list(kw) if k in clip_keys}
    T, N, V = (int(s) for s in sample_shape)
    enc = sit_config(size, n_chans=T, n_patches=N, vertices_per_patch=V, **kw)
    return SurfaceCLIP(CLIPConfig(fmri=enc, video_dim=stimuli[0].video.shape[1], audio_dim=stimuli[0].audio.shape[1],
                                  stimulus=encoder_facts(stimuli), **ckw))


def rebuild_clip(model_config: dict) -> SurfaceCLIP:
    return SurfaceCLIP(CLIPConfig.from_dict(dict(model_config)))


def pair_for_training(ds, model: nn.Module, kwargs: dict):
    """The objective's dataset: :class:`PairedDataset` over ``ds`` and ``kwargs["stimuli"]`` at the model's lag."""
    stimuli = open_stimuli(kwargs.get("stimuli"))
    cfg = getattr(model, "module", model).config
    check_encoders(cfg, stimuli)
    pairs = pair_samples(ds, stimuli, cfg.lag_s, segments=kwargs.get("segments") or "all")
    if not len(pairs):
        raise DataFileError("no fMRI sample pairs with a stimulus window (all before the lag, rest, or outside the segments)")
    logger.info("clip: %d of %d fMRI samples paired with stimulus windows (lag %g s)", len(pairs), len(ds), cfg.lag_s)
    return PairedDataset(ds, stimuli, pairs)


def check_encoders(cfg: CLIPConfig, stimuli: Sequence) -> None:
    """The stimulus stores must come from the encoders the model was trained with."""
    want = cfg.stimulus or {}
    for st in stimuli:
        got = encoder_facts([st])
        for k in ("video_encoder", "audio_encoder"):
            w, g = (want.get(k) or {}), got[k]
            if w and (w.get("weights_sha256") != g.get("weights_sha256") or w.get("dim") != g.get("dim")):
                raise ConfigError(
                    f"{st.path}: its {k.split('_')[0]} embeddings come from {g.get('name')} (weights "
                    f"{str(g.get('weights_sha256'))[:12]}…), but the model was trained on {w.get('name')} "
                    f"({str(w.get('weights_sha256'))[:12]}…); embed the movie with the same encoder and weights"
                )


def clip_loss(module: nn.Module, x: torch.Tensor, generator=None, y=None):
    """One batch: ``x`` ``(B, T, N, V)``, ``y = (video (B, Dv), audio (B, Da))`` → (weighted InfoNCE, per-pair losses)."""
    if y is None:
        raise ConfigError("the clip objective needs the stimulus embeddings of each sample (a paired dataset)")
    video, audio = (t.to(x.device, non_blocking=True) for t in y)
    out = module(x, video, audio)
    return out.loss, out.losses


register_objective(
    Objective(
        name="clip",
        modality="surface",
        build=build_clip,
        rebuild=rebuild_clip,
        loss=clip_loss,
        backbone=lambda m: getattr(m, "module", m).encoder,
        pair=pair_for_training,
    )
)
