"""Movie files → video frames and 16 kHz mono audio, and the 3-s / 1-s-hop stimulus windows.

Video is decoded with PyAV (FFmpeg); audio comes from a separate file read with soundfile, or from the
movie's own audio track (PyAV, resampled by FFmpeg). Windows follow the tri-modal HCP 7T paper
(arXiv 2501.16471): 3-s windows with a 1-s hop (= the fMRI TR), audio at 16 kHz (48,000 samples a window).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from neurokit._utils.errors import DataFileError

AUDIO_RATE = 16_000


@dataclass
class VideoInfo:
    """What a movie file holds (see :func:`probe_video`).

    Attributes
    ----------
    path : Path
        The movie file.
    fps : float
        Frames per second.
    n_frames : int
        Number of frames (from the container, or estimated as ``duration_s · fps``).
    duration_s : float
        Length of the video stream, in s.
    size : (int, int)
        Frame height and width, in pixels.
    has_audio : bool
        Whether the file has an audio track.
    """

    path: Path
    fps: float
    n_frames: int
    duration_s: float
    size: tuple[int, int]
    has_audio: bool


def _open(path: Path):
    import av

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such movie file")
    try:
        return av.open(str(path))
    except Exception as exc:  # av.error.* subclasses differ across versions
        raise DataFileError(f"{path}: cannot be read as a movie by FFmpeg/PyAV ({exc})") from exc


def probe_video(path: str | Path) -> VideoInfo:
    """Header facts of a movie file.

    Parameters
    ----------
    path : str or Path
        A movie FFmpeg can read (MP4, MKV, …).

    Returns
    -------
    VideoInfo
        Frame rate, frame count, duration, frame size and whether it has audio.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    DataFileError
        Not a movie FFmpeg can read, no video stream, or no frame rate.

    Examples
    --------
    >>> info = probe_video("movie_run-1.mkv")  # doctest: +SKIP
    >>> info.fps, info.size  # doctest: +SKIP
    (8.0, (64, 64))
    """
    path = Path(path)
    with _open(path) as c:
        if not c.streams.video:
            raise DataFileError(f"{path}: no video stream")
        vs = c.streams.video[0]
        fps = float(vs.average_rate or vs.guessed_rate or 0)
        if fps <= 0:
            raise DataFileError(f"{path}: the video stream states no frame rate")
        if vs.duration is not None and vs.time_base is not None:
            dur = float(vs.duration * vs.time_base)
        elif c.duration is not None:
            dur = c.duration / 1e6
        else:
            dur = (vs.frames or 0) / fps
        n = int(vs.frames or round(dur * fps))
        return VideoInfo(path, fps, n, dur, (vs.codec_context.height, vs.codec_context.width), bool(c.streams.audio))


def iter_frames(path: str | Path, *, every: int = 1) -> Iterator[tuple[float, np.ndarray]]:
    """Decode the movie's frames in order.

    Parameters
    ----------
    path : str or Path
        A movie FFmpeg can read.
    every : int
        Keep one frame in ``every`` (subsampling for speed; 1 keeps all frames).

    Yields
    ------
    time_s : float
        Presentation time of the frame, in s.
    rgb : ndarray, shape (H, W, 3), uint8
        The frame.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    DataFileError
        Not a movie, no video stream, or decoding failed part way.

    Examples
    --------
    >>> t, frame = next(iter_frames("movie_run-1.mkv"))  # doctest: +SKIP
    """
    path = Path(path)
    with _open(path) as c:
        if not c.streams.video:
            raise DataFileError(f"{path}: no video stream")
        vs = c.streams.video[0]
        fps = float(vs.average_rate or vs.guessed_rate)
        try:
            for i, fr in enumerate(c.decode(vs)):
                if i % every:
                    continue
                t = float(fr.time) if fr.time is not None else i / fps
                yield t, fr.to_ndarray(format="rgb24")
        except Exception as exc:
            if isinstance(exc, DataFileError):
                raise
            raise DataFileError(f"{path}: decoding failed after frame {i}: {exc}") from exc


def read_audio(path: str | Path, *, rate: int = AUDIO_RATE) -> np.ndarray:
    """Mono audio at ``rate`` Hz, float32 in [-1, 1].

    Sound files (WAV, FLAC, OGG, …) are read with soundfile and resampled with
    :func:`scipy.signal.resample_poly`; anything else (a movie) through its first audio track with PyAV.

    Parameters
    ----------
    path : str or Path
        A sound file or a movie with an audio track.
    rate : int
        Output sampling rate, in Hz (16,000).

    Returns
    -------
    ndarray, shape (n_samples,), float32
        The channels averaged to one.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    DataFileError
        Unreadable file, or a movie without an audio track (the message says to give the sound track as a
        separate file).

    Examples
    --------
    >>> audio = read_audio("movie_run-1.mkv")  # doctest: +SKIP
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such audio file")
    import soundfile as sf

    try:
        data, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except Exception:
        return _movie_audio(path, rate)
    x = data.mean(axis=1)
    if sr != rate:
        from fractions import Fraction

        from scipy.signal import resample_poly

        f = Fraction(rate, int(sr)).limit_denominator(1000)
        x = resample_poly(x, f.numerator, f.denominator).astype(np.float32)
    return np.ascontiguousarray(x, dtype=np.float32)


def _movie_audio(path: Path, rate: int) -> np.ndarray:
    import av

    with _open(path) as c:
        if not c.streams.audio:
            raise DataFileError(
                f"{path}: no audio track (and not a sound file soundfile reads); give the sound track as a separate "
                "file (audio='FILE.wav')"
            )
        res = av.AudioResampler(format="flt", layout="mono", rate=rate)
        chunks = []
        for fr in c.decode(c.streams.audio[0]):
            for out in res.resample(fr):
                chunks.append(out.to_ndarray().reshape(-1))
        for out in res.resample(None):
            chunks.append(out.to_ndarray().reshape(-1))
    return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)


def window_onsets(duration_s: float, *, window_s: float = 3.0, hop_s: float = 1.0) -> np.ndarray:
    """Onsets of every full stimulus window: 0, hop, 2·hop, … while ``onset + window_s <= duration_s``.

    Parameters
    ----------
    duration_s : float
        Length of the movie, in s.
    window_s : float
        Window length, in s (3 in the tri-modal paper).
    hop_s : float
        Step between onsets, in s (1 = the fMRI TR).

    Returns
    -------
    ndarray, shape (n_windows,), float
        Onsets in s; empty when the movie is shorter than one window.

    Examples
    --------
    >>> window_onsets(6.0).tolist(), window_onsets(2.0).tolist()
    ([0.0, 1.0, 2.0, 3.0], [])
    """
    n = int(np.floor((duration_s - window_s) / hop_s + 1e-6)) + 1
    if n < 1:
        return np.zeros(0)
    return np.arange(n) * float(hop_s)


def rest_mask(onsets: np.ndarray, clips, *, window_s: float = 3.0) -> np.ndarray:
    """Which windows are rest: not entirely inside one clip.

    Parameters
    ----------
    onsets : array_like, shape (n_windows,)
        Window onsets, in s.
    clips : sequence of [float, float] or None
        ``[[onset_s, offset_s], …]`` of the clips; None means the movie has no rest.
    window_s : float
        Window length, in s.

    Returns
    -------
    ndarray, shape (n_windows,), bool
        True for rest windows.

    Examples
    --------
    >>> rest_mask([0.0, 1.0, 2.0, 5.0], [[1.0, 5.0]]).tolist()
    [True, False, False, True]
    """
    onsets = np.asarray(onsets, dtype=float)
    if clips is None or len(clips) == 0:
        return np.zeros(len(onsets), dtype=bool)
    inside = np.zeros(len(onsets), dtype=bool)
    for lo, hi in clips:
        inside |= (onsets >= lo - 1e-6) & (onsets + window_s <= hi + 1e-6)
    return ~inside


def check_clips(clips, duration_s: float, source: str) -> list[list[float]]:
    """Validate clip boundaries: pairs ``[onset, offset]`` with onset < offset, sorted, non-overlapping, inside the movie.

    Parameters
    ----------
    clips : sequence of [float, float]
        Clip boundaries, in s.
    duration_s : float
        Length of the movie, in s (a clip may end up to 1 s after it).
    source : str
        Where the clips come from (a file name), for the error message.

    Returns
    -------
    list of [float, float]
        The clips as float pairs, in the given (sorted) order.

    Raises
    ------
    DataFileError
        Naming ``source`` and the faulty pair: not a pair with onset < offset, unsorted, overlapping, or ending
        after the movie.

    Examples
    --------
    >>> check_clips([(0, 10), (20, 30)], 40.0, "clips.json")
    [[0.0, 10.0], [20.0, 30.0]]
    """
    out = []
    for c in clips:
        if len(c) != 2 or not float(c[0]) < float(c[1]):
            raise DataFileError(f"{source}: clip {c!r} is not [onset_s, offset_s] with onset < offset")
        out.append([float(c[0]), float(c[1])])
    if out != sorted(out):  # the release listed its clip files unsorted; refuse rather than reorder silently
        raise DataFileError(f"{source}: clips are not sorted by onset: {out}")
    for a, b in zip(out, out[1:]):
        if b[0] < a[1]:
            raise DataFileError(f"{source}: clips {a} and {b} overlap")
    if out and out[-1][1] > duration_s + 1.0:
        raise DataFileError(f"{source}: clip {out[-1]} ends after the movie ({duration_s:.1f} s)")
    return out
