"""``neuro embed-stimuli`` and ``neuro retrieve``: stimulus stores and stimulus retrieval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table

from neurokit.cli.common import (
    check_json_out,
    console,
    fail,
    run_or_exit,
    setup_logging,
)


# ----------------------------------------------------------------------------- stimulus retrieval
def embed_stimuli_cmd(
    movie: Path = typer.Argument(..., help="Movie file (mp4, mkv, …; read with PyAV/FFmpeg)."),
    out: Path = typer.Option(..., "--out", "-o", help="Stimulus store to write (.h5)."),
    audio: Optional[Path] = typer.Option(
        None, show_default="the movie's audio track", help="Separate sound file (wav, flac, …)."
    ),
    clips: Optional[Path] = typer.Option(
        None,
        show_default="one clip, no rest",
        help="JSON file [[onset_s, offset_s], ...] of the clips; other windows are rest.",
    ),
    run: Optional[str] = typer.Option(
        None,
        show_default="from the file name (run-1, MOVIE1)",
        help="Run id the store pairs with (the fMRI store's run).",
    ),
    video_encoder: str = typer.Option(
        "ViT-B-32",
        help="open_clip model for frames, 'tiny' (random init), or videomae (the paper's VideoMAE-B, extra paper-encoders; --video-pretrained a model folder).",
    ),
    video_pretrained: Optional[str] = typer.Option(
        None,
        show_default="none (random init)",
        help="open_clip pretrained tag (e.g. laion2b_s34b_b79k; needs a network once) or a local weights file.",
    ),
    audio_encoder: str = typer.Option(
        "ViT-B-32",
        help="open_clip vision tower for log-mel spectrograms (AST-style), 'tiny', or wav2vec2 (the paper's wav2vec 2.0 base 960 h, extra paper-encoders; --audio-pretrained a model folder).",
    ),
    audio_pretrained: Optional[str] = typer.Option(
        None, show_default="none (random init)", help="open_clip pretrained tag or a local weights file."
    ),
    window: float = typer.Option(3.0, help="Window length in s."),
    hop: float = typer.Option(1.0, help="Hop between windows in s (= the fMRI TR)."),
    every: int = typer.Option(1, help="Embed one frame in EVERY (1: all frames)."),
    retest_clip: Optional[int] = typer.Option(
        None,
        show_default="none",
        help="Index in --clips of the test-retest clip (HCP 7T: -1, the last), which gives no retrieval query.",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", show_default="off", help="Replace an existing store."),
    progress: bool = typer.Option(True, help="Show progress bars."),
) -> None:
    """Embed a movie's video and audio (3-s windows, 1-s hop) with frozen open_clip towers into a stimulus store."""
    setup_logging(False)
    from neurokit.stimuli.store import (
        StimulusEncoders,
        StimulusStore,
        StimulusWindows,
        embed_stimuli,
    )

    clip_list = None
    if clips is not None:
        try:
            clip_list = json.loads(clips.read_text())
        except (OSError, ValueError) as exc:
            fail(ValueError(f"{clips}: not a JSON list of [onset_s, offset_s] pairs ({exc})"))
    encoders = StimulusEncoders(video_encoder, video_pretrained, audio_encoder, audio_pretrained)
    windows = run_or_exit(
        StimulusWindows, window_s=window, hop_s=hop, clips=clip_list, every=every, retest_clip=retest_clip
    )
    path = run_or_exit(
        embed_stimuli,
        movie,
        out,
        audio=audio,
        encoders=encoders,
        windows=windows,
        run=run,
        overwrite=overwrite,
        progress=progress,
    )
    st = StimulusStore(path)
    console.print(
        f"[green]wrote[/] {path}: run {st.run!r}, {len(st)} windows ({int(st.rest.sum())} rest), "
        f"video {st.video.shape[1]}-d, audio {st.audio.shape[1]}-d"
    )


def retrieve(
    checkpoint: Path = typer.Argument(..., help="`neuro pretrain --model clip` checkpoint (last.pt)."),
    fmri: List[Path] = typer.Option(..., "--fmri", help="Surface store(s) with the test runs (repeatable)."),
    stimuli: List[Path] = typer.Option(..., "--stimuli", help="Stimulus store(s), one per run (repeatable)."),
    subjects: Optional[str] = typer.Option(
        None, show_default="all", help="Test subjects, e.g. 'sim05,sim06' (unseen subjects)."
    ),
    segments: str = typer.Option(
        "all", help="all, or second_half for the unseen-segments test (train with --segments first_half)."
    ),
    queries: int = typer.Option(100, help="Queries per subject x run x hemisphere."),
    negatives: int = typer.Option(32, help="Negatives per pool (pool = 1 + negatives)."),
    exclude: float = typer.Option(
        3.0,
        help="Video negatives lie more than this many s from the true window (audio: only the true window is left out, --audio-exclude).",
    ),
    audio_exclude: float = typer.Option(
        0.0, help="Audio negatives lie more than this many s from the true window (release: 0, the window itself)."
    ),
    negatives_from: str = typer.Option(
        "other_segments",
        help="Where negatives come from: other_segments (the run's other clips, the release's), same_run (any window of the run, the query's scene included: harder) or same_segment (the query's own clip).",
    ),
    retest_clip: str = typer.Option(
        "store",
        help="The test-retest clip, which gives no query: store (as embed-stimuli recorded it), last, none, or a clip index.",
    ),
    shuffle: bool = typer.Option(
        False,
        "--shuffle",
        show_default="off",
        help="Control: stimulus windows shuffled against the fMRI (expect chance).",
    ),
    seed: int = typer.Option(0, help="Seed of the query and negative draws."),
    json_out: Optional[Path] = typer.Option(None, "--json", show_default="none", help="Write the JSON report here."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:K."),
) -> None:
    """Which clip was this person watching? Top-1/5/10 retrieval of video and audio windows from fMRI, beside chance."""
    setup_logging(False)
    check_json_out(json_out)
    from neurokit.pipelines.retrieval import retrieve as run

    subj = [s.strip() for s in subjects.split(",") if s.strip()] if subjects else None
    rep = run_or_exit(
        run,
        checkpoint,
        list(fmri),
        list(stimuli),
        subjects=subj,
        segments=segments,
        n_queries=queries,
        n_negatives=negatives,
        exclude_s=exclude,
        shuffle=shuffle,
        seed=seed,
        device=device,
        out=json_out,
        negatives_from=negatives_from.replace("-", "_"),
        audio_exclude_s=audio_exclude,
        retest_clip=retest_clip,
    )
    t = Table(
        title=f"retrieval: {rep['n_units']} subject x run x hemisphere, {rep['n_queries']} queries, pool {rep['pool_size']}"
        f" (negatives from {rep['negatives_from'].replace('_', ' ')})"
        + (" (SHUFFLED control)" if rep["shuffled"] else "")
    )
    t.add_column("")
    for k in ("top1", "top5", "top10"):
        t.add_column(k, justify="right")
    for m in ("video", "audio"):
        t.add_row(
            m, *(f"{100 * rep[m][k]['mean']:.1f} ± {100 * rep[m][k]['std']:.1f} %" for k in ("top1", "top5", "top10"))
        )
    t.add_row("chance", *(f"{100 * rep['chance'][k]:.1f} %" for k in ("top1", "top5", "top10")))
    console.print(t)
    if json_out:
        console.print(f"report: {json_out}")
