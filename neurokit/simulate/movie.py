"""A procedural movie with a sound track, for the retrieval simulation.

Clips separated by rest (black, silent), as in the HCP 7T movie runs. Each clip is a sequence of scenes
(6–12 s); a scene has a background colour and 2–3 shapes (disc, square, triangle) that move, bounce and
drift in hue, and a sound: a tone of its own pitch, amplitude-modulated, plus chirps (linear sweeps) and
noise bursts at random times. A scene change changes everything at once.
"""

from __future__ import annotations

import colorsys
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neurokit.stimuli.media import AUDIO_RATE


@dataclass
class MovieLayout:
    """When the clips of a procedural movie play (the rest of the time is rest: black and silent).

    Attributes
    ----------
    clips : list of [float, float]
        ``[onset_s, offset_s]`` of each clip, in s from the start of the movie.
    duration_s : float
        Length of the movie, in s.
    """

    clips: list
    duration_s: float


def movie_layout(n_clips: int = 3, clip_s: float = 40.0, rest_s: float = 10.0, lead_s: float = 4.0) -> MovieLayout:
    """A movie's clip timing: ``lead_s`` of rest, then ``n_clips`` clips separated (and followed) by rest.

    Parameters
    ----------
    n_clips : int
        Number of clips.
    clip_s : float
        Length of each clip, in s.
    rest_s : float
        Rest after each clip, in s.
    lead_s : float
        Rest before the first clip, in s.

    Returns
    -------
    MovieLayout
        The clip boundaries and the total duration.

    Examples
    --------
    >>> movie_layout(n_clips=2, clip_s=10, rest_s=5, lead_s=2)
    MovieLayout(clips=[[2.0, 12.0], [17.0, 27.0]], duration_s=32.0)
    """
    clips, t = [], float(lead_s)
    for _ in range(n_clips):
        clips.append([t, t + clip_s])
        t += clip_s + rest_s
    return MovieLayout(clips, t)


def _scenes(layout: MovieLayout, rng: np.random.Generator) -> list[dict]:
    scenes = []
    for lo, hi in layout.clips:
        t = lo
        while t < hi - 1e-9:
            d = min(float(rng.uniform(6, 12)), hi - t)
            shapes = []
            for _ in range(int(rng.integers(2, 4))):
                shapes.append(
                    {
                        "kind": int(rng.integers(0, 3)),
                        "hue": float(rng.random()),
                        "hue_rate": float(rng.uniform(-0.1, 0.1)),
                        "r": float(rng.uniform(0.08, 0.22)),
                        "pos": rng.uniform(0.2, 0.8, 2),
                        "vel": rng.uniform(-0.25, 0.25, 2),
                    }
                )
            scenes.append(
                {
                    "t0": t,
                    "t1": t + d,
                    "bg": colorsys.hsv_to_rgb(
                        float(rng.random()), float(rng.uniform(0.3, 0.9)), float(rng.uniform(0.2, 0.8))
                    ),
                    "shapes": shapes,
                    "f0": float(np.exp(rng.uniform(np.log(180), np.log(1200)))),
                    "am": float(rng.uniform(0.5, 4.0)),
                    "chirps": sorted(rng.uniform(t, t + d, int(rng.integers(1, 4))).tolist()),
                    "bursts": sorted(rng.uniform(t, t + d, int(rng.integers(0, 3))).tolist()),
                    "chirp_f": (float(rng.uniform(300, 1500)), float(rng.uniform(1500, 5000))),
                }
            )
            t += d
    return scenes


def _frame(scene: dict | None, t: float, size: int, yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
    if scene is None:
        return np.zeros((size, size, 3), np.uint8)
    img = np.empty((size, size, 3), np.float32)
    img[:] = scene["bg"]
    dt = t - scene["t0"]
    for s in scene["shapes"]:
        p = s["pos"] + s["vel"] * dt
        p = 1.0 - np.abs(1.0 - np.mod(p, 2.0))  # bounce off the frame edges
        cy, cx, r = p[0], p[1], s["r"]
        if s["kind"] == 0:
            inside = (yy - cy) ** 2 + (xx - cx) ** 2 < r**2
        elif s["kind"] == 1:
            inside = (np.abs(yy - cy) < r) & (np.abs(xx - cx) < r)
        else:
            inside = (yy - cy > -r) & (np.abs(xx - cx) < (yy - cy + r) / 2) & (yy - cy < r)
        img[inside] = colorsys.hsv_to_rgb((s["hue"] + s["hue_rate"] * dt) % 1.0, 0.9, 0.95)
    return (img * 255).astype(np.uint8)


def _sound(scenes: list[dict], duration_s: float, rng: np.random.Generator) -> np.ndarray:
    n = int(round(duration_s * AUDIO_RATE))
    y = 0.002 * rng.standard_normal(n).astype(np.float32)  # faint room noise, also in rest
    for sc in scenes:
        a, b = int(sc["t0"] * AUDIO_RATE), min(n, int(sc["t1"] * AUDIO_RATE))
        t = np.arange(b - a) / AUDIO_RATE
        y[a:b] += 0.25 * np.sin(2 * np.pi * sc["f0"] * t) * (0.6 + 0.4 * np.sin(2 * np.pi * sc["am"] * t))
        for c in sc["chirps"]:
            i, m = int(c * AUDIO_RATE), int(0.4 * AUDIO_RATE)
            tt = np.arange(min(m, n - i)) / AUDIO_RATE
            f0, f1 = sc["chirp_f"]
            y[i : i + len(tt)] += 0.3 * np.sin(2 * np.pi * (f0 * tt + 0.5 * (f1 - f0) / 0.4 * tt**2))
        for c in sc["bursts"]:
            i, m = int(c * AUDIO_RATE), int(0.3 * AUDIO_RATE)
            y[i : i + m] += 0.3 * rng.standard_normal(len(y[i : i + m]))
    return np.clip(y, -1, 1)


def make_movie(
    out: str | Path, layout: MovieLayout | None = None, *, fps: int = 8, size: int = 64, seed: int = 0
) -> tuple[Path, Path]:
    """Render the procedural movie and write its clip boundaries beside it.

    The movie is Matroska (H.264 video, 16-bit mono PCM audio at 16 kHz), e.g. ``movie_run-1.mkv``; the clip
    boundaries go to ``<out stem>.clips.json``.

    Parameters
    ----------
    out : str or Path
        The movie file to write (its folder is created if needed).
    layout : MovieLayout, optional
        Clip and rest timing; default :func:`movie_layout` ``()``.
    fps : int
        Frames per second (HCP movies: 24; the simulation's default 8 keeps it fast).
    size : int
        Frame height and width in pixels.
    seed : int
        Seed of the scenes (shapes, colours, sounds).

    Returns
    -------
    movie : Path
        The movie file.
    clips : Path
        The JSON list of ``[onset_s, offset_s]`` clip boundaries.

    Examples
    --------
    >>> movie, clips = make_movie("movie_run-1.mkv", movie_layout(n_clips=1, clip_s=6))  # doctest: +SKIP
    """
    import av

    layout = layout or movie_layout()
    rng = np.random.default_rng(seed)
    scenes = _scenes(layout, rng)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    yy, xx = np.mgrid[0:size, 0:size] / float(size)
    n_frames = int(round(layout.duration_s * fps))
    audio = _sound(scenes, layout.duration_s, rng)
    with av.open(str(out), "w") as c:
        vs = c.add_stream("libx264", rate=fps)
        vs.width = vs.height = size
        vs.pix_fmt = "yuv420p"
        vs.options = {"crf": "18", "preset": "ultrafast"}
        as_ = c.add_stream("pcm_s16le", rate=AUDIO_RATE)
        as_.layout = "mono"
        si = 0
        for i in range(n_frames):
            t = i / fps
            while si < len(scenes) and t >= scenes[si]["t1"]:
                si += 1
            sc = scenes[si] if si < len(scenes) and scenes[si]["t0"] <= t < scenes[si]["t1"] else None
            frame = av.VideoFrame.from_ndarray(_frame(sc, t, size, yy, xx), format="rgb24")
            for pkt in vs.encode(frame):
                c.mux(pkt)
        for pkt in vs.encode(None):
            c.mux(pkt)
        step = AUDIO_RATE
        pcm = np.round(audio * 32767).astype(np.int16)
        for k in range(0, len(pcm), step):
            fr = av.AudioFrame.from_ndarray(pcm[None, k : k + step], format="s16", layout="mono")
            fr.sample_rate = AUDIO_RATE
            fr.pts = k
            for pkt in as_.encode(fr):
                c.mux(pkt)
        for pkt in as_.encode(None):
            c.mux(pkt)
    clips = out.with_name(out.name.split(".")[0] + ".clips.json")
    clips.write_text(json.dumps(layout.clips))
    return out, clips
