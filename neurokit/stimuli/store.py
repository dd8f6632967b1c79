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
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from neurokit._utils.errors import DataFileError, StoreError
from neurokit._utils.hashing import file_sha256
from neurokit._utils.progress import progress_bar
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
    """The run id in a movie's file name: BIDS ``run-<id>``, or the digit of HCP's ``MOVIE<k>``.

    Parameters
    ----------
    path : str or Path
        A movie file (only its name is read).

    Returns
    -------
    str
        The run id, or ``""`` when the name has none.

    Examples
    --------
    >>> run_from_name("sub-01_task-movie_run-2.mkv"), run_from_name("7T_MOVIE3_CC1_v2.mp4"), run_from_name("a.mp4")
    ('2', '3', '')
    """
    name = Path(path).name
    m = re.search(r"run-([A-Za-z0-9]+)", name) or re.search(r"MOVIE(\d)", name)
    return m.group(1) if m else ""


def _thumb(rgb: np.ndarray) -> np.ndarray:
    import torch.nn.functional as F

    x = torch.from_numpy(np.ascontiguousarray(rgb)).permute(2, 0, 1)[None].float()
    x = F.interpolate(x, size=(THUMB, THUMB), mode="bilinear", antialias=True, align_corners=False)
    return x[0].permute(1, 2, 0).round().clamp(0, 255).byte().numpy()


@dataclass(frozen=True)
class StimulusEncoders:
    """The frozen towers a stimulus store is embedded with.

    Attributes
    ----------
    video, audio : str
        open_clip model names, or ``"tiny"`` (random init, for tests) — see :mod:`neurokit.stimuli.encoders`.
        The audio tower reads log-mel spectrograms as images (AST-style). The paper's encoders (extra
        ``paper-encoders``, :mod:`neurokit.stimuli.paper_encoders`): ``video="videomae"`` (VideoMAE-B, each
        window embedded whole) and ``audio="wav2vec2"`` (wav2vec 2.0 base 960 h), weights from
        ``*_pretrained`` (a local model folder or a Hub id); ``"videomae-tiny"``/``"wav2vec2-tiny"``: small
        random configurations, for tests.
    video_pretrained, audio_pretrained : str or path, optional
        open_clip pretrained tag or a local weights file (None: random init).

    Examples
    --------
    >>> StimulusEncoders(video="tiny", audio="tiny")
    StimulusEncoders(video='tiny', video_pretrained=None, audio='tiny', audio_pretrained=None)
    """

    video: str = "ViT-B-32"
    video_pretrained: str | Path | None = None
    audio: str = "ViT-B-32"
    audio_pretrained: str | Path | None = None


@dataclass(frozen=True)
class StimulusWindows:
    """How a movie is cut into windows.

    Attributes
    ----------
    window_s, hop_s : float
        Window length and hop in seconds (paper: 3 and 1 = the TR).
    clips : list of [onset_s, offset_s], optional
        Clip boundaries (sorted); windows not entirely inside one clip are marked rest. Default: one clip.
    every : int
        Embed one video frame in ``every`` (1: all frames, as in the paper).
    retest_clip : int, optional
        Index in ``clips`` of the test–retest clip (HCP 7T: the last clip of every run, ``-1``), recorded in
        the store; retrieval draws no query from it (the release's protocol). None: no such clip.

    Raises
    ------
    DataFileError
        ``window_s`` or ``hop_s`` not > 0, ``every`` < 1, ``retest_clip`` without clips or outside them.
    """

    window_s: float = 3.0
    hop_s: float = 1.0
    clips: Sequence[Sequence[float]] | None = None
    every: int = 1
    retest_clip: int | None = None

    def __post_init__(self) -> None:
        if self.window_s <= 0 or self.hop_s <= 0:
            raise DataFileError(f"window_s and hop_s must be > 0 (got {self.window_s}, {self.hop_s})")
        if int(self.every) < 1:
            raise DataFileError(f"every must be >= 1 (got {self.every})")
        if self.retest_clip is not None and not -len(self.clips or []) <= int(self.retest_clip) < len(self.clips or []):
            raise DataFileError(
                f"retest_clip={self.retest_clip}: not an index of the {len(self.clips or [])} clip(s) given (clips=)"
            )


def embed_stimuli(
    movie: str | Path,
    out: str | Path,
    *,
    audio: str | Path | None = None,
    encoders: StimulusEncoders = StimulusEncoders(),
    windows: StimulusWindows = StimulusWindows(),
    run: str | None = None,
    batch_size: int = 64,
    overwrite: bool = False,
    progress: bool = True,
) -> Path:
    """Embed a movie's video and audio in windows and write a stimulus store.

    Each window's video embedding is the mean of its frames' embeddings; its audio embedding is the audio
    tower's output for the window's log-mel spectrogram (as in the tri-modal CLIP release).

    Parameters
    ----------
    movie : path
        Movie file (anything FFmpeg reads: mp4, mkv, avi, …).
    out : path
        Store to write (``.h5``). Written to a temporary name and renamed when complete.
    audio : path, optional
        Separate sound file (soundfile); default: the movie's audio track.
    encoders : StimulusEncoders
        Video and audio towers and their weights.
    windows : StimulusWindows
        Window length, hop, clips and frame subsampling.
    run : str, optional
        Run id the store pairs with (an fMRI store's ``run``); default from the file name (``run-1``,
        ``MOVIE1``), else ``""``.
    batch_size : int
        Frames (or audio windows) embedded per forward pass.
    overwrite : bool
        Replace ``out`` if it exists.
    progress : bool
        Show a progress bar.

    Returns
    -------
    Path
        The store: ``video`` ``(n_windows, D_video)`` and ``audio`` ``(n_windows, D_audio)`` float32
        embeddings, window ``onsets`` in s, the ``rest`` mask and 48×48 ``thumbnails``.

    Raises
    ------
    DataFileError
        Unreadable movie or audio, no audio track and no ``audio``, a movie shorter than one window, bad clips.
    ConfigError
        Unknown encoder, weights that cannot be loaded (see :func:`~neurokit.stimuli.encoders.open_clip_tower`).
    FileExistsError
        ``out`` exists and ``overwrite`` is False.

    Examples
    --------
    >>> embed_stimuli("movie.mp4", "stim.h5", encoders=StimulusEncoders("tiny", audio="tiny"))  # doctest: +SKIP
    """
    movie, out = Path(movie), Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
    info = probe_video(movie)
    wave = read_audio(audio if audio is not None else movie)
    venc, aenc = _encoders(encoders)
    clip_input = getattr(venc, "clip_input", False)  # VideoMAE embeds whole windows, not frames
    frames = (_embed_clips if clip_input else _embed_frames)(movie, info, venc, windows, batch_size, progress)
    duration = min(frames.duration_s, len(wave) / AUDIO_RATE)
    onsets = window_onsets(duration, window_s=windows.window_s, hop_s=windows.hop_s)
    if len(onsets) == 0:
        raise DataFileError(
            f"{movie}: {duration:.2f} s of video and audio, shorter than one {windows.window_s:g}-s window"
        )
    video = (
        frames.embeddings[: len(onsets)].astype(np.float32)
        if clip_input
        else _window_means(frames, onsets, windows.window_s, movie)
    )
    audio_emb = _embed_audio(wave, onsets, windows.window_s, aenc, batch_size, progress)
    clip_list = check_clips(windows.clips, duration, str(movie)) if windows.clips else None
    rest = rest_mask(onsets, clip_list, window_s=windows.window_s)
    blank = np.zeros((THUMB, THUMB, 3), np.uint8)
    thumbs = np.stack([frames.thumbnails.get(i, blank) for i in range(len(onsets))])
    attrs = {
        "format": FORMAT,
        "source": str(movie),
        "source_sha256": file_sha256(movie),
        "audio_source": str(audio if audio is not None else movie),
        "audio_sha256": file_sha256(audio) if audio is not None else file_sha256(movie),
        "run": run if run is not None else run_from_name(movie),
        "duration_s": float(duration),
        "window_s": float(windows.window_s),
        "hop_s": float(windows.hop_s),
        "fps": float(info.fps) / windows.every,
        "audio_rate": AUDIO_RATE,
        "clips": json.dumps(clip_list),
        # (StimulusWindows refuses a retest clip without clips)
        **(
            {}
            if windows.retest_clip is None or clip_list is None
            else {"retest_clip": int(windows.retest_clip) % len(clip_list)}
        ),
        "video_encoder": json.dumps({**_public(venc.info), "weights_sha256": venc.weights_sha256, "dim": venc.dim}),
        "audio_encoder": json.dumps(
            {
                **_public(aenc.info),
                "weights_sha256": aenc.weights_sha256,
                "dim": aenc.dim,
                "input": getattr(aenc, "input_note", "log-mel 128 bins, 25 ms / 10 ms, AST AudioSet norm"),
            }
        ),
    }
    return write_stimulus_store(
        out, video=video, audio=audio_emb, onsets=onsets, rest=rest, thumbnails=thumbs, attrs=attrs, overwrite=overwrite
    )


def _encoders(encoders: StimulusEncoders):
    """The frozen video and audio encoders named in ``encoders``: open_clip towers, or the paper's VideoMAE /
    wav2vec 2.0 through ``transformers`` (:mod:`neurokit.stimuli.paper_encoders`)."""
    from neurokit.stimuli import paper_encoders as pe

    venc = (
        pe.paper_video_encoder(encoders.video, encoders.video_pretrained)
        if encoders.video in pe.PAPER_VIDEO
        else FrameEncoder(encoders.video, encoders.video_pretrained)
    )
    aenc = (
        pe.paper_audio_encoder(encoders.audio, encoders.audio_pretrained)
        if encoders.audio in pe.PAPER_AUDIO
        else SpectrogramEncoder(encoders.audio, encoders.audio_pretrained)
    )
    return venc, aenc


@dataclass
class _Frames:
    times: np.ndarray  # (n_frames,) s
    embeddings: np.ndarray  # (n_frames, D)
    thumbnails: dict  # window index → (48, 48, 3) uint8, the frame at the window's centre
    duration_s: float


def _embed_frames(movie: Path, info, venc, windows: StimulusWindows, batch_size: int, progress: bool) -> _Frames:
    """Every ``windows.every``-th frame embedded, in batches, with a thumbnail at each window centre."""
    every = int(windows.every)
    centres = (
        window_onsets(info.duration_s + 1.0, window_s=windows.window_s, hop_s=windows.hop_s) + windows.window_s / 2
    )
    times, embs, thumbs = [], [], {}
    batch: list[np.ndarray] = []  # frames waiting for the encoder

    def flush():
        if batch:
            with torch.no_grad():
                embs.append(venc(torch.from_numpy(np.stack(batch))).float().numpy())
            batch.clear()

    ti, duration = 0, 0.0
    frame_iter = progress_bar(
        iter_frames(movie, every=every),
        description=f"video {movie.name}",
        enabled=progress,
        total=max(1, info.n_frames // every),
    )
    for t, rgb in frame_iter:
        times.append(t)
        batch.append(rgb)
        while ti < len(centres) and t >= centres[ti]:
            thumbs[ti] = _thumb(rgb)
            ti += 1
        duration = t + every / info.fps
        if len(batch) == batch_size:
            flush()
    flush()
    if not times:
        raise DataFileError(f"{movie}: no video frame could be decoded")
    return _Frames(np.asarray(times), np.concatenate(embs), thumbs, duration)


def _embed_clips(movie: Path, info, venc, windows: StimulusWindows, batch_size: int, progress: bool) -> _Frames:
    """Windows embedded whole by a clip encoder (VideoMAE): the decoded frames of each window
    ``[onset, onset + window_s)``, ``venc.n_frames`` of them taken evenly, resized as the encoder wants; one
    embedding per window (``embeddings`` ``(n_windows, D)``, ``times`` the window onsets)."""
    from neurokit.stimuli.paper_encoders import clip_frame_indices

    every, win = int(windows.every), float(windows.window_s)
    onsets = window_onsets(info.duration_s + win + 1.0, window_s=win, hop_s=windows.hop_s)
    centres = onsets + win / 2
    buf_t: list[float] = []
    buf_f: list[np.ndarray] = []
    embs, thumbs = [], {}
    batch: list[np.ndarray] = []  # clips waiting for the encoder

    def flush():
        if batch:
            with torch.no_grad():
                embs.append(venc(torch.from_numpy(np.stack(batch))).float().numpy())
            batch.clear()

    def close(i: int):
        lo, hi = onsets[i] - 1e-6, onsets[i] + win - 1e-6
        sel = [k for k, t in enumerate(buf_t) if lo <= t < hi]
        if not sel:
            raise DataFileError(f"{movie}: the window at {onsets[i]:g} s holds no decoded frame (frame rate too low)")
        batch.append(np.stack([buf_f[sel[j]] for j in clip_frame_indices(len(sel), venc.n_frames)]))
        if len(batch) == batch_size:
            flush()
        nxt = onsets[i + 1] - 1e-6 if i + 1 < len(onsets) else np.inf
        while buf_t and buf_t[0] < nxt:
            buf_t.pop(0)
            buf_f.pop(0)

    wi = ti = 0
    duration = 0.0
    frame_iter = progress_bar(
        iter_frames(movie, every=every),
        description=f"video clips {movie.name}",
        enabled=progress,
        total=max(1, info.n_frames // every),
    )
    for t, rgb in frame_iter:
        while wi < len(onsets) and t >= onsets[wi] + win - 1e-6:
            close(wi)
            wi += 1
        buf_t.append(t)
        with torch.no_grad():
            buf_f.append(venc.resize(torch.from_numpy(np.ascontiguousarray(rgb))[None])[0].numpy())
        while ti < len(centres) and t >= centres[ti]:
            thumbs[ti] = _thumb(rgb)
            ti += 1
        duration = t + every / info.fps
    if duration == 0.0:
        raise DataFileError(f"{movie}: no video frame could be decoded")
    while wi < len(onsets) and onsets[wi] + win <= duration + 1e-6:
        close(wi)
        wi += 1
    flush()
    emb = np.concatenate(embs) if embs else np.zeros((0, venc.dim), np.float32)
    return _Frames(onsets[:wi], emb, thumbs, duration)


def _window_means(frames: _Frames, onsets: np.ndarray, window_s: float, movie: Path) -> np.ndarray:
    """``(n_windows, D)`` float32: the mean frame embedding of each window ``[onset, onset + window_s)``."""
    emb = frames.embeddings
    csum = np.concatenate([np.zeros((1, emb.shape[1])), np.cumsum(emb, axis=0, dtype=np.float64)])
    lo = np.searchsorted(frames.times, onsets - 1e-6)
    hi = np.searchsorted(frames.times, onsets + window_s - 1e-6)
    if np.any(hi <= lo):
        bad = onsets[hi <= lo][:5].tolist()
        raise DataFileError(f"{movie}: windows at {bad} s hold no decoded frame (frame rate too low for the window)")
    return ((csum[hi] - csum[lo]) / (hi - lo)[:, None]).astype(np.float32)


def _embed_audio(
    wave: np.ndarray, onsets: np.ndarray, window_s: float, aenc, batch_size: int, progress: bool
) -> np.ndarray:
    """``(n_windows, D)`` float32: the audio tower's embedding of each window's waveform."""
    n_win = int(window_s * AUDIO_RATE)
    starts = np.round(onsets * AUDIO_RATE).astype(int)
    out = []
    for b0 in progress_bar(range(0, len(starts), batch_size), description="audio windows", enabled=progress):
        seg = np.stack([wave[s : s + n_win] for s in starts[b0 : b0 + batch_size]])
        with torch.no_grad():
            out.append(aenc.encode(seg).float().numpy())
    return np.concatenate(out).astype(np.float32)


def _public(info: dict) -> dict:
    return {k: info[k] for k in ("name", "pretrained")}


def write_stimulus_store(
    out: str | Path,
    *,
    video: np.ndarray,
    audio: np.ndarray,
    onsets: np.ndarray,
    rest: np.ndarray | None = None,
    thumbnails: np.ndarray | None = None,
    attrs: dict | None = None,
    overwrite: bool = False,
) -> Path:
    """Write arrays as a stimulus store (layout in the module docstring), atomically (temporary file, then rename).

    Parameters
    ----------
    out : str or Path
        The HDF5 file to write (its folder is created if needed).
    video : ndarray, shape (n_windows, D_video)
        Video embedding of each window (stored as float32).
    audio : ndarray, shape (n_windows, D_audio)
        Audio embedding of each window (stored as float32).
    onsets : ndarray, shape (n_windows,)
        Window onsets, in s from the movie start.
    rest : ndarray of bool, shape (n_windows,), optional
        Rest windows (see :func:`~neurokit.stimuli.media.rest_mask`); default none.
    thumbnails : ndarray, shape (n_windows, 48, 48, 3), uint8, optional
        A small frame per window, for plots.
    attrs : dict, optional
        File attributes (source, run, window_s, encoders…); ``format``, ``n_windows`` and ``complete`` are added.
    overwrite : bool
        Replace ``out`` if it exists.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    FileExistsError
        ``out`` exists and ``overwrite`` is False.
    StoreError
        ``video`` or ``audio`` does not have one row per onset.

    Examples
    --------
    >>> import numpy as np
    >>> path = write_stimulus_store("run1.h5", video=np.zeros((4, 8)), audio=np.zeros((4, 8)),
    ...                             onsets=np.arange(4.0))  # doctest: +SKIP
    """
    import h5py

    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
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

    Parameters
    ----------
    path : str or Path
        A store written by :func:`embed_stimuli` or :func:`write_stimulus_store`.

    Attributes
    ----------
    video : ndarray, shape (n_windows, D_video), float32
        Video embedding of each window.
    audio : ndarray, shape (n_windows, D_audio), float32
        Audio embedding of each window.
    onsets : ndarray, shape (n_windows,), float64
        Window onsets, in s from the movie start.
    rest : ndarray, shape (n_windows,), bool
        Windows not entirely inside one clip.
    thumbnails : ndarray, shape (n_windows, 48, 48, 3), uint8, or None
        A small frame per window, when stored.
    attrs : dict
        The file's attributes (source, encoders, window_s, hop_s…).
    run : str
        The run id the store pairs with.
    clips : list of [onset_s, offset_s] or None
        Clip boundaries, in s.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    StoreError
        Not a stimulus store, or an incomplete one.

    Examples
    --------
    >>> store = StimulusStore("stim_run-1.h5")  # doctest: +SKIP
    >>> store.video.shape  # doctest: +SKIP
    (917, 512)
    """

    def __init__(self, path: str | Path) -> None:
        import h5py

        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(
                f"{self.path}: no such stimulus store (make one with `neuro embed-stimuli MOVIE -o FILE`)"
            )
        try:
            with h5py.File(self.path, "r") as f:
                self.attrs = {
                    k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v) for k, v in f.attrs.items()
                }
                if self.attrs.get("format") != FORMAT:
                    raise StoreError(
                        f"{self.path}: not a stimulus store (format {self.attrs.get('format')!r}, "
                        f"expected {FORMAT!r}); make one with `neuro embed-stimuli`"
                    )
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
