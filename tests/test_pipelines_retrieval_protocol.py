"""The retrieval protocol as the SIM release runs it (issue 18 items 10, 11): queries a clip uniformly then a
window, none from the test–retest clip; negatives from the run's other clips; the ±3 s exclusion on video only;
today's same-run negatives as the harder option. All on hand-made run layouts."""

from __future__ import annotations

import numpy as np
import pytest

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.pairs import Pairs
from neurokit.evaluation.retrieval import (
    protocol_units,
    resolve_retest_clip,
    retrieval_pools,
    sample_queries,
    window_segments,
)
from neurokit.stimuli.media import rest_mask


class _Run:
    """A hand-made run: 1-s hop, 3-s windows; clips A [5, 17) (10 windows), B [20, 83) (61 windows),
    C [90, 133) (41 windows) and the test–retest clip R [140, 183) (41 windows); rest elsewhere."""

    def __init__(self, retest=None):
        self.onsets = np.arange(181, dtype=float)
        self.clips = [[5.0, 17.0], [20.0, 83.0], [90.0, 133.0], [140.0, 183.0]]
        self.window_s = 3.0
        self.rest = rest_mask(self.onsets, self.clips)
        self.attrs = {} if retest is None else {"retest_clip": retest}
        self.path = "run.h5"


def _pairs(st, subjects=("a",)):
    live = np.flatnonzero(~st.rest)
    n = len(live)
    k = len(subjects)
    return Pairs(
        sample=np.arange(k * n),
        stim=np.zeros(k * n, int),
        window=np.tile(live, k),
        subject=np.repeat(np.array(subjects), n),
        run=np.array(["1"] * k * n),
        hemi=np.array(["L"] * k * n),
        onset=np.tile(st.onsets[live] + 6, k),
    )


def test_window_segments_of_the_hand_made_run():
    st = _Run()
    seg = window_segments(st.onsets, st.clips, st.window_s, st.rest)
    assert [int((seg == c).sum()) for c in range(4)] == [10, 61, 41, 41]
    assert seg[5] == 0 and seg[14] == 0 and seg[15] == -1  # window [15, 18) leaves clip A
    assert (seg[st.rest] == -1).all() and (seg[~st.rest] >= 0).all()
    assert window_segments(np.arange(4.0), None, 3.0).tolist() == [0, 0, 0, 0]  # no clips: one clip


def test_queries_draw_a_clip_uniformly_then_a_window_and_never_the_retest_clip():
    st = _Run()
    seg = window_segments(st.onsets, st.clips, st.window_s, st.rest)
    live = np.flatnonzero(~st.rest)
    q = sample_queries(live, seg, 6000, rng=np.random.default_rng(0), exclude_segments=[3])
    got = seg[live[q]]
    assert not (got == 3).any()  # no query from the test-retest clip
    share = np.bincount(got, minlength=4)[:3] / len(got)
    # a clip uniformly: 1/3 each although clip A holds 10 of the 112 windows (window-uniform would give 0.09);
    # binomial std of a share at n = 6000 is 0.006
    assert share == pytest.approx([1 / 3] * 3, abs=0.03)
    # then a window uniformly inside the clip: clip A's 10 windows each ~1/10 of its draws
    a = np.bincount(live[q][got == 0] - 5, minlength=10) / (got == 0).sum()
    assert a == pytest.approx([0.1] * 10, abs=0.03)
    # independent draws (the release's random.randint): repeats happen
    assert len(np.unique(q[:100])) < 100
    with pytest.raises(DataFileError, match="no clip"):
        sample_queries(live[:10], seg, 5, rng=np.random.default_rng(0), exclude_segments=[0])


def test_default_negatives_come_from_the_other_clips_only():
    st = _Run()
    seg = window_segments(st.onsets, st.clips, st.window_s, st.rest)
    live = np.flatnonzero(~st.rest)
    pools = retrieval_pools(st.onsets, seg >= 0, live, n_negatives=32, rng=np.random.default_rng(0), segment_of=seg)
    assert pools.shape == (len(live), 33) and (pools[:, 0] == live).all()
    for row in pools:
        assert len(set(row.tolist())) == 33
        assert (seg[row[1:]] != seg[row[0]]).all()  # never the query's own clip
        assert (seg[row[1:]] >= 0).all()  # never rest
    # the test-retest clip may give negatives (the release's inter_movie_sample keeps it)
    assert (seg[pools[:, 1:]] == 3).any()
    # a run whose other clips hold too few windows: a clear error naming the rule
    two = [[5.0, 17.0], [20.0, 50.0]]  # 10 and 28 windows: a query in the second clip has only 10 others
    seg2 = window_segments(st.onsets, two, 3.0)
    with pytest.raises(DataFileError, match="other clips of the run.*32 negatives"):
        retrieval_pools(st.onsets, seg2 >= 0, np.array([30]), rng=np.random.default_rng(0), segment_of=seg2)
    with pytest.raises(ConfigError, match="negatives_from"):
        retrieval_pools(
            st.onsets, seg >= 0, live[:1], rng=np.random.default_rng(0), segment_of=seg, negatives_from="any"
        )


def test_same_run_option_keeps_the_query_scene_and_same_segment_only_it():
    st = _Run()
    seg = window_segments(st.onsets, st.clips, st.window_s, st.rest)
    w = np.array([40])  # in clip B
    rng = np.random.default_rng(0)
    same_run = retrieval_pools(st.onsets, seg >= 0, np.repeat(w, 200), rng=rng, negatives_from="same_run")
    own = (seg[same_run[:, 1:]] == 1).mean()
    # the query's own clip B gives 61 − 7 (±3 s) of the 153 − 7 allowed windows: 54/146 = 0.370 of the negatives
    assert own == pytest.approx(54 / 146, abs=0.03)
    assert (np.abs(same_run[:, 1:] - 40) > 3).all()
    same_seg = retrieval_pools(st.onsets, seg >= 0, w, rng=rng, segment_of=seg, negatives_from="same_segment")
    assert (seg[same_seg[0, 1:]] == 1).all()


def test_the_three_second_exclusion_is_on_video_only():
    """A clip of exactly 34 windows, negatives from it alone: the audio pool (only the true window left out)
    must hold all 33 others — the neighbours 1-3 s away included; the video pool (±3 s out) has 27 and fails."""
    on = np.arange(40.0)
    seg = window_segments(on, [[2.0, 38.0]], 3.0)
    assert int((seg == 0).sum()) == 34
    w = np.array([20])
    audio = retrieval_pools(
        on,
        seg >= 0,
        w,
        n_negatives=33,
        exclude_s=0.0,
        rng=np.random.default_rng(0),
        segment_of=seg,
        negatives_from="same_segment",
    )
    assert sorted(audio[0, 1:].tolist()) == [i for i in range(2, 36) if i != 20]
    with pytest.raises(DataFileError, match="only 27"):
        retrieval_pools(
            on,
            seg >= 0,
            w,
            n_negatives=33,
            exclude_s=3.0,
            rng=np.random.default_rng(0),
            segment_of=seg,
            negatives_from="same_segment",
        )


def test_protocol_units_on_a_hand_made_run():
    st = _Run(retest=3)
    pairs = _pairs(st, ("a", "b"))
    units = protocol_units(pairs, [st], n_queries=100, seed=0)
    seg = window_segments(st.onsets, st.clips, st.window_s, st.rest)
    assert [u["subject"] for u in units] == ["a", "b"]
    for u in units:
        qw = pairs.window[u["pairs"]]
        assert len(qw) == 100 and not (seg[qw] == 3).any()  # the store's test-retest clip gives no query
        assert (pairs.subject[u["pairs"]] == u["subject"]).all()
        v, a = u["pools"]["video"], u["pools"]["audio"]
        assert (v[:, 0] == qw).all() and (a[:, 0] == qw).all()
        for pool in (v, a):
            assert (seg[pool[:, 1:]] != seg[pool[:, :1]]).all()
        assert not np.array_equal(v[:, 1:], a[:, 1:])  # separate draws per modality
    # the retest clip can be overridden: with none, the last clip gives queries too
    units = protocol_units(pairs, [st], n_queries=300, seed=0, retest_clip="none")
    assert (seg[pairs.window[units[0]["pairs"]]] == 3).any()
    # the harder option runs on the same layout; a too-short layout under the default names the fix
    hard = protocol_units(pairs, [st], n_queries=10, seed=0, negatives_from="same_run")
    assert all((seg[u["pools"]["video"][:, 1:]] >= 0).all() for u in hard)


def test_resolve_retest_clip():
    st = _Run(retest=3)
    assert resolve_retest_clip(st) == 3 and resolve_retest_clip(_Run()) is None
    assert resolve_retest_clip(_Run(), "last") == 3 and resolve_retest_clip(st, "none") is None
    assert resolve_retest_clip(_Run(), -2) == 2 and resolve_retest_clip(_Run(), "1") == 1
    with pytest.raises(ConfigError, match="4 clip"):
        resolve_retest_clip(_Run(), 4)
    with pytest.raises(ConfigError, match="retest_clip='first': give store, last, none or a clip index"):
        resolve_retest_clip(_Run(), "first")


def test_embed_stimuli_records_the_retest_clip():
    from neurokit.stimuli.store import StimulusWindows

    assert StimulusWindows(clips=[[0, 10], [20, 30]], retest_clip=-1).retest_clip == -1
    with pytest.raises(DataFileError, match="retest_clip=2"):
        StimulusWindows(clips=[[0, 10], [20, 30]], retest_clip=2)
    with pytest.raises(DataFileError, match=r"retest_clip=0: .*\(clips=\)"):
        StimulusWindows(retest_clip=0)  # no clips given


def test_cli_refuses_an_unknown_negative_source_before_any_work(tmp_path):
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    r = CliRunner().invoke(
        app,
        [
            "retrieve",
            str(tmp_path / "missing.pt"),
            "--fmri",
            "f.h5",
            "--stimuli",
            "s.h5",
            "--negatives-from",
            "everywhere",
        ],
    )
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "--negatives-from" in out and "other_segments, same_run, same_segment" in out
    assert "Traceback" not in out
