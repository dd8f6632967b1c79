"""The HDF5 stimulus store: one movie run's frozen video and audio embeddings per 3-s window.

Layout (``format = "neurokit-stimuli-1"``)::

    /video       (n_windows, D_video) float32  mean frame embedding of each window
    /audio       (n_windows, D_audio) float32  AST-style embedding of each window's 48,000 samples
    /onsets      (n_windows,) float64          window onset, s from the movie start
    /rest        (n_windows,) bool             window not entirely inside one clip (rest, credits, …)
    /thumbnails  (n_windows, 48, 48, 3) uint8  the frame at the window's middle (for plots)
    attrs        source, source_sha256, audio_source, audio_sha256, run, duration_s, window_s, hop_s, fps,
                 audio_rate, clips (JSON), video_encoder / audio_encoder (JSON: name, pretrained,
                 weights_sha256, dim), complete
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from neurokit._utils.errors import DataFileError, StoreError
from neurokit._utils.hashing import file_sha256
from neurokit.stimuli.encoders import FrameEncoder, SpectrogramEncoder
from neurokit.stimuli.media import (
    AUDIO_RATE,
    check_clips,
    iter_frames,
    probe_video,
    read_audio,
    rest_mask,
    window_onsets,
)

FORMAT = "neurokit-stimuli-1"
THUMB = 48


def run_from_name(path: str | Path) -> str:
    """Run id from a movie's file name: BIDS ``run-<id>``, or the digit of HCP's ``MOVIE<k>``; else ``""``."""
    name = Path(path).name
    m = re.search(r"run-([A-Za-z0-9]+)", name) or re.search(r"MOVIE(\d)", name)
    return m.group(1) if m else ""


def _thumb(rgb: np.ndarray) -> np.ndarray:
    import torch.nn.functional as F

    x = torch.from_numpy(np.ascontiguousarray(rgb)).permute(2, 0, 1)[None].float()
    x = F.interpolate(x, size=(THUMB, THUMB), mode="bilinear", antialias=True, align_corners=False)
    return x[0].permute(1, 2, 0).round().clamp(0, 255).byte().numpy()


def embed_stimuli(
    movie: str | Path,
    out: str | Path,
    *,
    audio: str | Path | None = None,
    video_encoder: str = "ViT-B-32",
    video_pretrained: str | Path | None = None,
    audio_encoder: str = "ViT-B-32",
    audio_pretrained: str | Path | None = None,
    window_s: float = 3.0,
    hop_s: float = 1.0,
    clips: Sequence[Sequence[float]] | None = None,
    run: str | None = None,
    every: int = 1,
    batch_size: int = 64,
    overwrite: bool = False,
    progress: bool = True,
) -> Path:
    """Embed a movie's video and audio in ``window_s`` windows with a ``hop_s`` hop and write a stimulus store.

    Parameters
    ----------
    movie : path
        Movie file (anything FFmpeg reads: mp4, mkv, avi, …).
    out : path
        Store to write (``.h5``). Written to a temporary name and renamed when complete.
    audio : path, optional
        Separate sound file (soundfile); default: the movie's audio track.
    video_encoder, audio_encoder : str
        open_clip model names, or ``"tiny"`` (random init) — see :mod:`neurokit.stimuli.encoders`.
    video_pretrained, audio_pretrained : str or path, optional
        open_clip pretrained tag or local weights file (None: random init).
    window_s, hop_s : float
        Window length and hop in seconds (paper: 3 and 1 = the TR).
    clips : list of [onset_s, offset_s], optional
        Clip boundaries (sorted); windows not entirely inside one clip are marked rest. Default: one clip.
    run : str, optional
        Run id the store pairs with (an fMRI store's ``run``); default from the file name (``run-1``,
        ``MOVIE1``), else ``""``.
    every : int
        Embed one video frame in ``every`` (1: all frames, as in the paper).

    Returns
    -------
    Path of the store.

    Raises
    ------
    DataFileError
        Unreadable movie or audio, no audio track and no ``audio``, a movie shorter than one window, bad clips.
    ConfigError
        Unknown encoder, weights that cannot be loaded (see :func:`~neurokit.stimuli.encoders.open_clip_tower`).
    FileExistsError
        ``out`` exists and ``overwrite`` is False.
    """
    movie, out = Path(movie), Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    if window_s <= 0 or hop_s <= 0:
        raise DataFileError(f"window_s and hop_s must be > 0 (got {window_s}, {hop_s})")
    info = probe_video(movie)
    wave = read_audio(audio if audio is not None else movie)
    venc = FrameEncoder(video_encoder, video_pretrained)
    aenc = SpectrogramEncoder(audio_encoder, audio_pretrained)

    times, embs, thumbs_at = [], [], {}
    duration_v = 0.0
    targets = window_onsets(info.duration_s + 1.0, window_s=window_s, hop_s=hop_s) + window_s / 2
    batch: list[np.ndarray] = []

    def flush():
        if batch:
            with torch.no_grad():
                embs.append(venc(torch.from_numpy(np.stack(batch))).float().numpy())
            batch.clear()

    from neurokit._utils.progress import progress_bar

    ti = 0
    frame_iter = progress_bar(iter_frames(movie, every=every), description=f"video {movie.name}", enabled=progress,
                              total=max(1, info.n_frames // every))
    for t, rgb in frame_iter:
        times.append(t)
        batch.append(rgb)
        while ti < len(targets) and t >= targets[ti]:
            thumbs_at[ti] = _thumb(rgb)
            ti += 1
        duration_v = t + every / info.fps
        if len(batch) == batch_size:
            flush()
    flush()
    if not times:
        raise DataFileError(f"{movie}: no video frame could be decoded")
    duration_a = len(wave) / AUDIO_RATE
    duration = min(duration_v, duration_a)
    onsets = window_onsets(duration, window_s=window_s, hop_s=hop_s)
    if len(onsets) == 0:
        raise DataFileError(f"{movie}: {duration:.2f} s of video and audio, shorter than one {window_s:g}-s window")
    frame_emb = np.concatenate(embs)
    times = np.asarray(times)
    csum = np.concatenate([np.zeros((1, frame_emb.shape[1])), np.cumsum(frame_emb, axis=0, dtype=np.float64)])
    lo = np.searchsorted(times, onsets - 1e-6)
    hi = np.searchsorted(times, onsets + window_s - 1e-6)
    if np.any(hi <= lo):
        bad = onsets[hi <= lo][:5].tolist()
        raise DataFileError(f"{movie}: windows at {bad} s hold no decoded frame (frame rate too low for the window)")
    video = ((csum[hi] - csum[lo]) / (hi - lo)[:, None]).astype(np.float32)

    n_win = int(window_s * AUDIO_RATE)
    starts = np.round(onsets * AUDIO_RATE).astype(int)
    aud = []
    for b0 in progress_bar(range(0, len(starts), batch_size), description="audio windows", enabled=progress):
        seg = np.stack([wave[s : s + n_win] for s in starts[b0 : b0 + batch_size]])
        with torch.no_grad():
            aud.append(aenc.encode(seg).float().numpy())
    audio_emb = np.concatenate(aud).astype(np.float32)

    clip_list = check_clips(clips, duration, str(movie)) if clips else None
    rest = rest_mask(onsets, clip_list, window_s=window_s)
    blank = np.zeros((THUMB, THUMB, 3), np.uint8)
    thumbs = np.stack([thumbs_at.get(i, blank) for i in range(len(onsets))])
    attrs = {
        "format": FORMAT,
        "source": str(movie),
        "source_sha256": file_sha256(movie),
        "audio_source": str(audio if audio is not None else movie),
        "audio_sha256": file_sha256(audio) if audio is not None else file_sha256(movie),
        "run": run if run is not None else run_from_name(movie),
        "duration_s": float(duration),
        "window_s": float(window_s),
        "hop_s": float(hop_s),
        "fps": float(info.fps) / every,
        "audio_rate": AUDIO_RATE,
        "clips": json.dumps(clip_list),
        "video_encoder": json.dumps({**_public(venc.info), "weights_sha256": venc.weights_sha256, "dim": venc.dim}),
        "audio_encoder": json.dumps({**_public(aenc.info), "weights_sha256": aenc.weights_sha256, "dim": aenc.dim,
                                     "input": "log-mel 128 bins, 25 ms / 10 ms, AST AudioSet norm"}),
    }
    return write_stimulus_store(out, video=video, audio=audio_emb, onsets=onsets, rest=rest, thumbnails=thumbs,
                                attrs=attrs, overwrite=overwrite)


def _public(info: dict) -> dict:
    return {k: info[k] for k in ("name", "pretrained")}


def write_stimulus_store(out: str | Path, *, video: np.ndarray, audio: np.ndarray, onsets: np.ndarray,
                         rest: np.ndarray | None = None, thumbnails: np.ndarray | None = None, attrs: dict | None = None,
                         overwrite: bool = False) -> Path:
    """Write arrays as a stimulus store (see the module docstring), atomically (temporary file, then rename)."""
    import h5py

    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True (CLI: --overwrite) to replace it")
    n = len(onsets)
    if len(video) != n or len(audio) != n:
        raise StoreError(f"{out}: {len(video)} video and {len(audio)} audio embeddings for {n} onsets")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    with h5py.File(tmp, "w") as f:
        f.create_dataset("video", data=np.asarray(video, np.float32))
        f.create_dataset("audio", data=np.asarray(audio, np.float32))
        f.create_dataset("onsets", data=np.asarray(onsets, np.float64))
        f.create_dataset("rest", data=np.zeros(n, bool) if rest is None else np.asarray(rest, bool))
        if thumbnails is not None:
            f.create_dataset("thumbnails", data=np.asarray(thumbnails, np.uint8))
        for k, v in {"format": FORMAT, **(attrs or {})}.items():
            f.attrs[k] = v
        f.attrs["n_windows"] = n
        f.attrs["complete"] = True
    tmp.replace(out)
    return out


class StimulusStore:
    """A stimulus store read into memory (small: a 15-min run at 768-d is ~5 MB).

    Attributes
    ----------
    video : ndarray (n_windows, D_video) float32
    audio : ndarray (n_windows, D_audio) float32
    onsets : ndarray (n_windows,) float64, s
    rest : ndarray (n_windows,) bool
    thumbnails : ndarray (n_windows, 48, 48, 3) uint8 or None
    attrs : dict
    run : str
    clips : list of [onset_s, offset_s] or None

    Raises
    ------
    StoreError
        Not a stimulus store, or an incomplete one.
    """

    def __init__(self, path: str | Path) -> None:
        import h5py

        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"{self.path}: no such stimulus store (make one with `neuro embed-stimuli MOVIE -o FILE`)")
        try:
            with h5py.File(self.path, "r") as f:
                self.attrs = {k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v) for k, v in f.attrs.items()}
                if self.attrs.get("format") != FORMAT:
                    raise StoreError(f"{self.path}: not a stimulus store (format {self.attrs.get('format')!r}, "
                                     f"expected {FORMAT!r}); make one with `neuro embed-stimuli`")
                if not self.attrs.get("complete"):
                    raise StoreError(f"{self.path}: incomplete stimulus store; write it again")
                self.video = f["video"][()]
                self.audio = f["audio"][()]
                self.onsets = f["onsets"][()]
                self.rest = f["rest"][()].astype(bool)
                self.thumbnails = f["thumbnails"][()] if "thumbnails" in f else None
        except OSError as exc:
            raise StoreError(f"{self.path}: not an HDF5 file ({exc})") from exc
        for k in ("video_encoder", "audio_encoder", "clips"):
            if isinstance(self.attrs.get(k), (str, bytes)):
                self.attrs[k] = json.loads(self.attrs[k])

    @property
    def run(self) -> str:
        return str(self.attrs.get("run", ""))

    @property
    def clips(self):
        return self.attrs.get("clips")

    @property
    def window_s(self) -> float:
        return float(self.attrs.get("window_s", 3.0))

    @property
    def hop_s(self) -> float:
        return float(self.attrs.get("hop_s", 1.0))

    @property
    def duration_s(self) -> float:
        """Length of the movie in s (when not recorded: the end of its last window)."""
        d = self.attrs.get("duration_s")
        return float(d) if d is not None else float(self.onsets[-1] + self.window_s) if len(self.onsets) else 0.0

    @property
    def source(self) -> str:
        """The movie file the store was embedded from (as recorded; ``""`` when not)."""
        return str(self.attrs.get("source", ""))

    def __len__(self) -> int:
        return len(self.onsets)

    def window_index(self, times: np.ndarray) -> np.ndarray:
        """Index of the window starting at each time (s); -1 where none starts there (within 1 ms)."""
        t = np.asarray(times, dtype=float)
        i = np.round((t - self.onsets[0]) / self.hop_s).astype(int)
        ok = (i >= 0) & (i < len(self.onsets))
        ok[ok] &= np.abs(self.onsets[i[ok]] - t[ok]) < 1e-3
        return np.where(ok, i, -1)

    def __repr__(self) -> str:
        return f"StimulusStore({self.path.name}, run {self.run!r}, {len(self)} windows)"
