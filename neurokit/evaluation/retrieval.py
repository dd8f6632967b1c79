"""The stimulus-retrieval protocol: the pools, queries, units and top-k scoring that ``neuro retrieve`` runs
(:func:`neurokit.pipelines.retrieval.retrieve`), and the fMRI / stimulus embeddings it ranks. The protocol is
that of the tri-modal HCP 7T paper (arXiv 2501.16471) as its release runs it (metrics-lab/sim
``tools/retrieval.py`` with ``config/retrieval/hparams.yml``):

- per test subject × run × hemisphere ("unit"), ``n_queries`` = 100 queries, each drawn as the release does:
  a movie clip ("segment") uniformly among the run's clips, then a window uniformly inside it (draws are
  independent, so a window can be drawn twice); the test–retest clip (HCP 7T: the clip that closes every
  run) gives no query, and rest gives none;
- each query's pool: its true window plus ``n_negatives`` = 32 windows drawn without replacement from the
  run's non-rest windows of the *other* clips (``negatives_from="other_segments"``, the release's
  ``inter_movie_sample``; the test–retest clip may give negatives); the video pool also leaves out windows
  whose onset lies within ``exclude_s`` = 3 s of the true one, the audio pool only the true window itself
  (``audio_exclude_s`` = 0; the release's audio sampler removes the reference alone). Video and audio pools are
  drawn separately, as the release scores them in separate runs;
- windows ranked by cosine similarity of the projected, L2-normalised embeddings; a query scores top-k when
  fewer than k pool windows are at least as similar as the true one (ties count against it);
- top-1/5/10 mean ± std over units, for video and audio, beside chance k / pool size (pool 33: 3.0 %,
  15.2 %, 30.3 %).

``negatives_from="same_run"`` is neurokit's harder option (its earlier default): negatives from any non-rest
window of the run, the query's own clip — the same scene, seconds away — included. ``"same_segment"`` is the
release's ``intra_movie_sample``: negatives only from the query's own clip.

"Unseen subjects": pass the held-out subjects. "Unseen segments": train with ``segments="first_half"`` and
retrieve with ``segments="second_half"`` (queries and pools from the second half of each clip). The
embeddings go through exactly the model's training forward (:meth:`SurfaceCLIP.embed_fmri` on the store's
samples, z-scored per frame when the store was written) — no extra normalisation at retrieval.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.pairs import Pairs, in_segment

logger = logging.getLogger("neurokit")

TOPK = (1, 5, 10)


#: where a query's negatives come from (``negatives_from``)
NEGATIVES_FROM = ("other_segments", "same_run", "same_segment")


def window_segments(onsets: np.ndarray, clips, window_s: float, rest: np.ndarray | None = None) -> np.ndarray:
    """The clip (segment) index of each window, ``(n_windows,)`` int: the clip that holds the window entirely,
    ``-1`` for rest windows and windows in no clip. Without ``clips`` every non-rest window is in clip 0.

    Examples
    --------
    >>> window_segments(np.arange(6.0), [[0.0, 4.0], [4.0, 9.0]], 2.0).tolist()
    [0, 0, 0, -1, 1, 1]
    """
    onsets = np.asarray(onsets, dtype=float)
    seg = np.full(len(onsets), -1, dtype=int)
    if not clips:
        seg[:] = 0
    else:
        for i, (lo, hi) in enumerate(clips):
            inside = (onsets >= lo - 1e-6) & (onsets + window_s <= hi + 1e-6)
            seg[inside & (seg < 0)] = i
    if rest is not None:
        seg[np.asarray(rest, bool)] = -1
    return seg


def retrieval_pools(
    window_onsets: np.ndarray,
    candidates: np.ndarray,
    true_windows: np.ndarray,
    *,
    n_negatives: int = 32,
    exclude_s: float = 3.0,
    rng: np.random.Generator,
    segment_of: np.ndarray | None = None,
    negatives_from: str = "other_segments",
) -> np.ndarray:
    """Pools of window indices ``(n_queries, 1 + n_negatives)``, the true window first.

    Parameters
    ----------
    window_onsets : ndarray (n_windows,)
        Onsets (s) of the run's stimulus windows.
    candidates : ndarray of bool (n_windows,)
        Windows allowed as negatives (not rest; inside the evaluated segments).
    true_windows : ndarray of int (n_queries,)
    n_negatives : int
        Negatives per pool (the protocol's 32).
    exclude_s : float
        Negatives start more than this many s from the true window (video: 3 s; audio: 0, the true window
        alone is left out).
    rng : numpy.random.Generator
    segment_of : ndarray of int (n_windows,), optional
        Clip index of each window (:func:`window_segments`); needed unless ``negatives_from="same_run"``.
    negatives_from : {"other_segments", "same_run", "same_segment"}
        ``"other_segments"`` (default, the release's ``inter_movie_sample``): windows of the run's other clips;
        ``"same_run"``: any candidate of the run (harder: the query's own scene included); ``"same_segment"``
        (the release's ``intra_movie_sample``): windows of the query's own clip only.

    Returns
    -------
    ndarray of int (n_queries, 1 + n_negatives)
        Window indices, drawn without replacement within a pool.

    Raises
    ------
    ConfigError
        Unknown ``negatives_from``, or ``segment_of`` missing where it is needed.
    DataFileError
        Fewer than ``n_negatives`` allowed windows for a query (the message names the rule that ran short).

    Examples
    --------
    >>> on = np.arange(60.0)
    >>> seg = window_segments(on, [[0, 30], [30, 63]], 3.0)
    >>> p = retrieval_pools(on, seg >= 0, np.array([5]), n_negatives=4, rng=np.random.default_rng(0), segment_of=seg)
    >>> bool((seg[p[0, 1:]] == 1).all())
    True
    """
    if negatives_from not in NEGATIVES_FROM:
        raise ConfigError(f"negatives_from={negatives_from!r}; allowed: {', '.join(NEGATIVES_FROM)}")
    if negatives_from != "same_run" and segment_of is None:
        raise ConfigError(f"negatives_from={negatives_from!r} needs the clip of each window (segment_of)")
    onsets = np.asarray(window_onsets, dtype=float)
    cand = np.flatnonzero(candidates)
    pools = np.empty((len(true_windows), 1 + n_negatives), dtype=int)
    for q, w in enumerate(true_windows):
        pool = cand
        if negatives_from == "other_segments":
            assert segment_of is not None  # refused above
            pool = pool[(segment_of[pool] != segment_of[w]) & (segment_of[pool] >= 0)]
        elif negatives_from == "same_segment":
            assert segment_of is not None  # refused above
            pool = pool[segment_of[pool] == segment_of[w]]
        far = pool[(np.abs(onsets[pool] - onsets[w]) > exclude_s + 1e-9) & (pool != w)]
        if len(far) < n_negatives:
            where = {
                "other_segments": "in the other clips of the run",
                "same_run": "in the run",
                "same_segment": "in the query's own clip",
            }[negatives_from]
            raise DataFileError(
                f"only {len(far)} non-rest windows {where} more than {exclude_s:g} s from the window at {onsets[w]:g} s; "
                f"the protocol needs {n_negatives} negatives (a longer run; clips given to neuro embed-stimuli with "
                "clips=; another negatives_from=; or a smaller n_negatives=)"
            )
        pools[q, 0] = w
        pools[q, 1:] = rng.choice(far, size=n_negatives, replace=False)
    return pools


def sample_queries(
    windows: np.ndarray, segment_of: np.ndarray, n_queries: int, *, rng: np.random.Generator, exclude_segments=()
) -> np.ndarray:
    """The release's query draw: ``n_queries`` times, a clip uniformly among those that hold one of ``windows``
    (minus ``exclude_segments``, e.g. the test–retest clip), then one of its windows uniformly.

    Parameters
    ----------
    windows : ndarray of int (n,)
        Window index of each candidate query (e.g. the paired fMRI samples of one unit).
    segment_of : ndarray of int (n_windows,)
        Clip of each window (:func:`window_segments`; ``-1``: none, never drawn).
    n_queries : int
    rng : numpy.random.Generator
    exclude_segments : iterable of int
        Clips that give no query.

    Returns
    -------
    ndarray of int (n_queries,)
        Positions into ``windows``, drawn with replacement (independent draws, as ``random.choice`` then
        ``random.randint`` in the release).

    Raises
    ------
    DataFileError
        No clip left to draw from.

    Examples
    --------
    >>> seg = np.array([0, 0, 0, 1, 2])
    >>> q = sample_queries(np.arange(5), seg, 6, rng=np.random.default_rng(0), exclude_segments=[2])
    >>> sorted(set(seg[q].tolist())) <= [0, 1]
    True
    """
    windows = np.asarray(windows, dtype=int)
    seg = np.asarray(segment_of)[windows]
    excluded = {int(e) for e in exclude_segments}
    clips = [c for c in np.unique(seg) if c >= 0 and int(c) not in excluded]
    if not clips:
        raise DataFileError("no clip to draw queries from (all rest, excluded as test-retest, or outside the segments)")
    by_clip = [np.flatnonzero(seg == c) for c in clips]
    picks = rng.integers(0, len(clips), size=n_queries)
    return np.array([by_clip[c][rng.integers(0, len(by_clip[c]))] for c in picks], dtype=int)


def resolve_retest_clip(st, retest_clip="store") -> int | None:
    """Index of the test–retest clip of stimulus store ``st`` (None: no such clip).

    ``retest_clip``: ``"store"`` (what the store records, ``neuro embed-stimuli --retest-clip``; none when it
    records nothing), ``"last"`` (the run's last clip, as in HCP 7T), ``"none"``/None, or a clip index
    (negative counts from the end).

    Raises
    ------
    ConfigError
        An index outside the store's clips, or another value.
    """
    if retest_clip == "store":
        retest_clip = st.attrs.get("retest_clip") if hasattr(st, "attrs") else None
    if retest_clip is None or retest_clip == "none":
        return None
    n = len(st.clips or [])
    if retest_clip == "last":
        retest_clip = -1
    try:
        k = int(retest_clip)
    except (TypeError, ValueError):
        raise ConfigError(f"retest_clip={retest_clip!r}: give store, last, none or a clip index") from None
    if not -n <= k < n:
        raise ConfigError(f"retest_clip={retest_clip!r}: {getattr(st, 'path', 'the stimulus store')} has {n} clip(s)")
    return k % n


def pool_hits(
    query: np.ndarray, windows: np.ndarray, pools: np.ndarray, ks: Sequence[int] = TOPK
) -> dict[int, np.ndarray]:
    """Top-k hits of each query: ``query`` ``(Q, D)`` and ``windows`` ``(n_windows, D)`` unit vectors,
    ``pools`` ``(Q, P)`` with the true window first → ``{k: bool (Q,)}``."""
    sims = np.einsum("qd,qpd->qp", query, windows[pools])
    rank = (sims[:, 1:] >= sims[:, :1]).sum(axis=1)  # pool windows at least as similar as the true one
    return {k: rank < k for k in ks}


def chance_levels(pool_size: int, ks: Sequence[int] = TOPK) -> dict[str, float]:
    return {f"top{k}": min(k, pool_size) / pool_size for k in ks}


def protocol_units(
    pairs: Pairs,
    stimuli: Sequence,
    *,
    n_queries: int = 100,
    n_negatives: int = 32,
    exclude_s: float = 3.0,
    audio_exclude_s: float = 0.0,
    segments: str = "all",
    seed: int = 0,
    negatives_from: str = "other_segments",
    retest_clip="store",
) -> list[dict]:
    """The protocol's queries and pools per subject × run × hemisphere (module docstring).

    Parameters
    ----------
    pairs : Pairs
        fMRI samples paired with stimulus windows (:func:`~neurokit.data.pairs.pair_samples`).
    stimuli : sequence of StimulusStore
    n_queries, n_negatives : int
        100 and 32 in the protocol.
    exclude_s, audio_exclude_s : float
        Exclusion around the true window for the video pool (3 s) and the audio pool (0 s: itself only).
    segments : {"all", "first_half", "second_half"}
    seed : int
    negatives_from : {"other_segments", "same_run", "same_segment"}
        See :func:`retrieval_pools`.
    retest_clip : "store", "last", "none" or int
        The clip that gives no query (:func:`resolve_retest_clip`).

    Returns
    -------
    list of dict
        ``{"subject", "run", "hemi", "pairs": indices into ``pairs`` (queries, (Q,)), "stim": store index,
        "pools": {"video": (Q, 1 + n_negatives), "audio": (Q, 1 + n_negatives)} window indices}``, in sorted
        unit order; seeded by ``seed``.

    Raises
    ------
    DataFileError
        See :func:`retrieval_pools` and :func:`sample_queries`.
    """
    rng = np.random.default_rng(seed)
    units = []
    keys = sorted(set(zip(pairs.subject.tolist(), pairs.run.tolist(), pairs.hemi.tolist())))
    for subj, run, hemi in keys:
        idx = np.flatnonzero((pairs.subject == subj) & (pairs.run == run) & (pairs.hemi == hemi))
        si = int(pairs.stim[idx[0]])
        st = stimuli[si]
        seg = window_segments(st.onsets, st.clips, st.window_s, st.rest)
        retest = resolve_retest_clip(st, retest_clip)
        q = idx[
            sample_queries(
                pairs.window[idx], seg, n_queries, rng=rng, exclude_segments=[] if retest is None else [retest]
            )
        ]
        cand = (seg >= 0) & in_segment(st.onsets, st.clips, st.window_s, segments)
        pools = {
            m: retrieval_pools(
                st.onsets,
                cand,
                pairs.window[q],
                n_negatives=n_negatives,
                exclude_s=ex,
                rng=rng,
                segment_of=seg,
                negatives_from=negatives_from,
            )
            for m, ex in (("video", exclude_s), ("audio", audio_exclude_s))
        }
        units.append({"subject": subj, "run": run, "hemi": hemi, "pairs": q, "stim": si, "pools": pools})
    return units


def score_units(units: list[dict], query_emb: np.ndarray, window_emb: Sequence[dict], ks=TOPK) -> dict:
    """Top-k per unit and mean ± std over units. ``query_emb``: ``(n_pairs, D)`` unit vectors indexed like the
    pairs; ``window_emb``: per stimulus store ``{"video": (n_windows, D), "audio": …}`` unit vectors."""
    out: dict = {"units": []}
    mods = list(window_emb[0])
    per: dict[str, dict[int, list[float]]] = {m: {k: [] for k in ks} for m in mods}
    for u in units:
        row = {"subject": u["subject"], "run": u["run"], "hemi": u["hemi"], "n_queries": int(len(u["pairs"]))}
        for m in mods:
            pools = u["pools"][m] if isinstance(u["pools"], dict) else u["pools"]
            hits = pool_hits(
                query_emb[m][u["pairs"]] if isinstance(query_emb, dict) else query_emb[u["pairs"]],
                window_emb[u["stim"]][m],
                pools,
                ks,
            )
            for k in ks:
                row[f"{m}_top{k}"] = float(hits[k].mean())
                per[m][k].append(float(hits[k].mean()))
        out["units"].append(row)
    for m in mods:
        out[m] = {f"top{k}": {"mean": float(np.mean(per[m][k])), "std": float(np.std(per[m][k]))} for k in ks}
    return out


@torch.no_grad()
def embed_pairs(model, ds, pairs: Pairs, *, batch_size: int = 64, device: str | torch.device = "cpu") -> np.ndarray:
    """Projected fMRI embeddings ``(n_pairs, embed_dim)`` float32 of the paired samples (eval mode)."""
    model.eval()
    out = []
    for b in range(0, len(pairs), batch_size):
        x = torch.stack([ds[int(i)][0] for i in pairs.sample[b : b + batch_size]]).to(device)
        out.append(model.embed_fmri(x).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.embed_dim), np.float32)


@torch.no_grad()
def embed_windows(model, stimuli: Sequence, *, device="cpu", shuffle: bool = False, seed: int = 0) -> list[dict]:
    """Projected video/audio embeddings of every window of each stimulus store.

    ``shuffle``: the control — permute the non-rest windows' embeddings against their onsets (each run its
    own permutation), so the fMRI is matched with the wrong stimulus windows."""
    model.eval()
    rng = np.random.default_rng(seed + 7919)
    out = []
    for st in stimuli:
        v, a = np.asarray(st.video, np.float32), np.asarray(st.audio, np.float32)
        if shuffle:
            live = np.flatnonzero(~st.rest)
            perm = live[rng.permutation(len(live))]
            v, a = v.copy(), a.copy()
            v[live], a[live] = v[perm], a[perm]
        out.append(
            {
                "video": model.embed_video(torch.from_numpy(v).to(device)).cpu().numpy(),
                "audio": model.embed_audio(torch.from_numpy(a).to(device)).cpu().numpy(),
            }
        )
    return out
