"""The baselines that see what a masked model sees (spherical spline for EEG; Gaussian kernel from the nearest
visible vertices and ridge from the visible vertices for surface), recomputed by hand from the store and compared
with the held-out record; the surface hold-out kept apart from training by a gap at least the correlation time;
scoring on values hidden at the source mesh's resolution."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from neurokit.cards.recipes import SurfaceRecipe
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

pytestmark = pytest.mark.usefixtures("two_torch_threads")

FSA5 = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{h}h.first100TR.mgz"
EEG8 = ["Fz", "Cz", "Pz", "C3", "C4", "F3", "F4", "Oz"]


def _raw_interpolated(x: np.ndarray, bads: list[str]) -> np.ndarray:
    """MNE's own ``interpolate_bads`` of ``x`` ``(8, P)`` on the standard montage: the bad channels' values."""
    import warnings

    import mne

    from neurokit.geometry.channels import montage_1005

    info = mne.create_info(EEG8, 200.0, "eeg")
    raw = mne.io.RawArray(x.copy(), info, verbose=False)
    raw.set_montage(montage_1005(), verbose=False)
    raw.info["bads"] = list(bads)
    with warnings.catch_warnings():  # 8 electrodes: MNE warns that its sphere fit may be inaccurate
        warnings.simplefilter("ignore")
        raw.interpolate_bads(reset_bads=True, verbose=False)
    return raw.get_data()[[EEG8.index(b) for b in bads]]


def test_spherical_spline_equals_mne_interpolate_bads():
    from neurokit.training.sphere_baselines import SplineInterpolation

    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 50))
    s = SplineInterpolation.for_channels(EEG8)
    for bads in (["Cz"], ["Fz", "C4", "Oz"], ["F3", "F4", "Pz", "C3"]):
        mask = torch.tensor([[[float(c in bads)] for c in EEG8]])  # (1, 8, 1): one patch
        pred = s.predict(torch.from_numpy(x)[None, :, None], mask)[0, :, 0].numpy()
        rows = [EEG8.index(b) for b in bads]
        np.testing.assert_allclose(pred[rows], _raw_interpolated(x, bads), rtol=1e-6, atol=1e-9)
        assert np.isnan(pred[[i for i in range(8) if i not in rows]]).all()  # visible channels: not predicted
    # channels with no standard position are neither read nor predicted; the spline says so when none has one
    s2 = SplineInterpolation.for_channels(EEG8[:6] + ["EMG1", "EOG2"])
    assert s2.placed.tolist() == [True] * 6 + [False] * 2
    mask = torch.tensor([[[1.0], [0], [0], [0], [0], [0], [1.0], [0]]])
    pred = s2.predict(torch.ones(1, 8, 1, 3), mask)[0, :, 0]
    assert torch.isnan(pred[6]).all() and torch.allclose(pred[0], torch.ones(3, dtype=torch.float64))


def _eeg_store(path):
    from neurokit.store.patch_store import PatchStoreWriter

    from neurokit.training.sphere_baselines import electrode_positions

    rng = np.random.default_rng(0)
    mix = electrode_positions(EEG8)[0] * 10  # three fields linear across the scalp: space tells a masked channel
    with PatchStoreWriter(path, (8, 2, 200), attrs=dict(modality="eeg", ch_names=EEG8, sfreq=200.0)) as w:
        for i in range(24):
            x = (mix @ rng.normal(size=(3, 400))).reshape(8, 2, 200) + 0.1 * rng.normal(size=(8, 2, 200))
            w.append(x[None].astype(np.float32), subject=f"S{i % 6}")
    return path


@pytest.mark.slow
def test_eeg_heldout_record_holds_the_spline_recomputed_with_mne(tmp_path):
    """The held-out windows of a pretraining run, with the same masks, interpolated by MNE's ``interpolate_bads``:
    the record's ``heldout_spline`` and the verdict's baselines match."""
    from neurokit.data.dataset import PatchDataset
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.training.config import PretrainConfig

    store = _eeg_store(tmp_path / "eeg.h5")
    cfg = PretrainConfig(model_kwargs={"n_layers": 1}, max_steps=1, batch_size=8, device="cpu", progress=False,
                         val_fraction=0.2, normalize="none", seed=3)  # fmt: skip
    res = pretrain(store, tmp_path / "pt", cfg)
    h = res["heldout_history"][-1]
    held = PatchDataset(store, subjects=sorted({f"S{i}" for i in range(6)} - set(res["subjects"])))
    x = torch.stack([held[i][0] for i in range(len(held))]).double().numpy()  # (4, 8, 2, 200): one batch
    gen = torch.Generator().manual_seed(cfg.seed)
    mask = torch.bernoulli(torch.full((len(x), 8, 2), 0.5), generator=gen).bool().numpy()  # cbramod_masked's draw
    sse = zero = n = 0.0
    for b in range(len(x)):
        for p in range(2):
            bads = [EEG8[c] for c in np.flatnonzero(mask[b, :, p])]
            if not bads or len(bads) == 8:  # nothing masked, or nothing visible to read
                continue
            truth = x[b, [EEG8.index(c) for c in bads], p]
            sse += float(((_raw_interpolated(x[b, :, p], bads) - truth) ** 2).sum())
            zero += float((truth**2).sum())
            n += truth.size
    assert h["heldout_spline"] == pytest.approx(sse / n, rel=1e-6)
    got_ratio = h["heldout_spline"] / h.get("heldout_spline_zero", h["heldout_zero"])
    assert got_ratio == pytest.approx(sse / zero, rel=1e-6)
    assert h["baselines"]["spline"] == pytest.approx(got_ratio)
    assert got_ratio < 0.8  # fields smooth across the scalp: the spline reads a masked channel from the others
    assert res["verdict"]["baselines"]["spline"] == pytest.approx(got_ratio)
    assert h["best_baseline"] == min(h["baselines"], key=h["baselines"].get)


@pytest.fixture(scope="module")
def fsa5_ico1(surface_root, tmp_path_factory):
    """Frames 0-59 of both hemispheres of the shared run (the card's train block) on ico1 patches (80 × 561)."""
    runs = [SurfaceRun(surface_root / FSA5.format(h=h), "010188", "02", "1", frames=(0, 60)) for h in "lr"]
    out = tmp_path_factory.mktemp("stores") / "fsa5_ico1.h5"
    return write_surface_store(out, runs, SurfaceRecipe(grid="ico6/ico1", tubelet=3))


def _acf_time(frames: np.ndarray) -> int:
    """Correlation time by hand: first lag where the mean over vertices of the autocorrelation is below 1/e."""
    y = frames - frames.mean(0)
    var = (y**2).sum(0)
    ok = var > 1e-9
    for lag in range(1, len(y)):
        if np.mean((y[:-lag, ok] * y[lag:, ok]).sum(0) / var[ok]) < np.exp(-1):
            return lag
    return len(y)


def test_the_default_surface_holdout_keeps_a_gap_of_the_correlation_time(fsa5_ico1):
    """Frames 54-59 are held out, but no longer against training frames 0-53: the training tubelets end at least
    the correlation time of their own frames (measured here by hand from the store) before the first held-out
    frame, and the tubelets between are neither trained on nor held out."""
    from neurokit.data.dataset import PatchDataset
    from neurokit.data.selection import split_heldout

    h = split_heldout(PatchDataset(fsa5_ico1), 0.1)
    held_on, train_on = h.held.meta("onset"), h.train.meta("onset")
    assert sorted(set(held_on.tolist())) == [54.0, 57.0]
    last_train, first_held = train_on.max() + 2, held_on.min()  # tubelets of 3 frames, TR 1 s
    with h5py.File(fsa5_ico1, "r") as f:
        frames = f["frames"][:].astype(np.float64)  # (120, 40962): left frames 0-59, then right
    taus = [_acf_time(frames[o : o + int(last_train) + 1]) for o in (0, 60)]
    gap = int(first_held - last_train - 1)
    assert gap >= max(taus) >= 3  # resting fMRI: several frames
    assert h.gap_frames == gap and h.correlation_frames == max(taus)
    assert f"gap {gap} frames ≥ correlation time {max(taus)} frames" in h.apart
    assert last_train < 53  # not adjacent any more
    n_gap = 40 - len(h.train) - len(h.held)
    assert n_gap == 2 * ((first_held - (last_train + 1)) // 3) and n_gap > 0  # the gap's tubelets are in neither


def test_frame_block_keeps_a_run_whole_when_its_correlation_time_leaves_nothing():
    from neurokit.data.selection import frame_block_split

    onset, run = np.arange(6.0), np.array(["r"] * 6)
    b = frame_block_split((onset, run, 1.0, 1.0), np.arange(6), 0.2, frames_of=lambda r: [np.ones((len(r), 2))])
    assert len(b.held) == 0 and "leaves no training frames" in b.phrase


@pytest.mark.slow
def test_surface_heldout_record_holds_kernel_and_ridge_recomputed_by_hand(fsa5_ico1, tmp_path):
    """A SiT run's held-out record against numpy and scikit-learn on the store's frames: the model's tube masks,
    the values whose fsaverage5 source vertices no visible vertex shares, the Gaussian kernel over the 8 nearest
    visible vertices at the width the record states, and a ridge (scikit-learn's) from the visible vertices fitted
    on the training frames at the penalty the record states."""
    from scipy.spatial import cKDTree
    from sklearn.linear_model import Ridge

    from neurokit.data.dataset import PatchDataset
    from neurokit.data.selection import split_heldout
    from neurokit.geometry.icosphere import icosphere
    from neurokit.geometry.patches import patch_table
    from neurokit.models.vsmae import tube_mask
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.preprocessing.surface.resample import default_sphere, load_sphere, resampling_matrix
    from neurokit.training.config import PretrainConfig

    cfg = PretrainConfig(model="sit", model_kwargs={"n_layers": 1}, max_steps=1, batch_size=8, device="cpu",
                         progress=False, split="all")  # fmt: skip
    res = pretrain([fsa5_ico1], tmp_path / "pt", cfg)
    h = res["heldout_history"][-1]
    assert res["holdout"][0]["unit"] == "frame block" and "gap" in h["heldout_apart"]
    split = split_heldout(PatchDataset(fsa5_ico1), cfg.val_fraction)
    with h5py.File(fsa5_ico1, "r") as f:
        frames = f["frames"][:].astype(np.float64)
        start, hemi = f["sample_start"][:], f["meta/hemi"][:].astype(str)
    rows_h, rows_t = split.held.index[:, 1], split.train.index[:, 1]
    ids = np.asarray(patch_table(1))  # (80, 561)
    coords = np.asarray(icosphere(6).vertices, dtype=np.float64)
    coords = coords / np.linalg.norm(coords, axis=1, keepdims=True)
    corners = {}
    for hh in ("L", "R"):
        src = load_sphere(default_sphere("fsaverage5", hh), hh)
        corners[hh] = (resampling_matrix(src.mirrored() if hh == "R" else src, 6) > 0).tocsr()
    train = np.concatenate([frames[s : s + 3] for s in start[rows_t]])  # the ridge's training frames
    _, masked = tube_mask(len(rows_h), 80, 3, 0.75, generator=torch.Generator().manual_seed(cfg.seed))
    spacing = float(np.median(cKDTree(coords).query(coords, k=2)[0][:, 1]))
    width = h["heldout_fitted"]["kernel_width_spacings"] * spacing
    sums = {"kernel": 0.0, "ridge": 0.0, "zero": 0.0, "n": 0, "hidden": 0}
    for b, r in enumerate(rows_h):
        vis_v = np.zeros(40962, bool)
        vis_v[ids[~masked[b].numpy()].ravel()] = True
        a = corners[hemi[r]]
        touched = np.asarray(a @ (np.asarray(a.T @ vis_v.astype(float)).ravel() > 0)).ravel() > 0
        deep = ~vis_v & ~touched
        sums["hidden"] += 3 * int(np.bincount(ids[masked[b].numpy()].ravel(), minlength=40962)[~vis_v].sum())
        x = frames[start[r] : start[r] + 3]  # (3, 40962)
        d, j = cKDTree(coords[vis_v]).query(coords[deep], k=8)
        w = np.exp(-0.5 * ((d / width) ** 2 - (d.min(1, keepdims=True) / width) ** 2))  # no 0/0 far from all
        kern = (x[:, np.flatnonzero(vis_v)[j]] * (w / w.sum(1, keepdims=True))).sum(-1)
        fs = train[:, vis_v]
        lam = h["heldout_fitted"]["ridge_penalty"] * (fs**2).sum() / len(fs)
        ridge = Ridge(alpha=lam, fit_intercept=False).fit(fs, train[:, deep]).predict(x[:, vis_v])
        # a vertex in several masked patches is scored once per patch slot holding it
        slots = np.bincount(ids[masked[b].numpy()].ravel(), minlength=40962)[deep]
        truth = x[:, deep]
        sums["kernel"] += float((((kern - truth) ** 2) * slots).sum())
        sums["ridge"] += float((((ridge - truth) ** 2) * slots).sum())
        sums["zero"] += float(((truth**2) * slots).sum())
        sums["n"] += 3 * int(slots.sum())
    assert h["heldout_n"] == sums["n"]
    assert h["heldout_zero"] == pytest.approx(sums["zero"] / sums["n"], rel=1e-5)
    assert h["heldout_kernel"] == pytest.approx(sums["kernel"] / sums["n"], rel=1e-5)
    assert h["heldout_ridge"] == pytest.approx(sums["ridge"] / sums["n"], rel=1e-4)
    assert h["baselines"]["kernel"] == pytest.approx(sums["kernel"] / sums["zero"], rel=1e-5)
    assert "fsaverage5 source vertices are all hidden" in h["heldout_scoring"]
    share = sums["n"] / sums["hidden"]  # the others share a source vertex with a visible value
    assert 0.5 < share < 0.99 and f"{100 * share:.1f} % of the hidden values" in h["heldout_scoring"]
    assert h["baselines"]["ridge"] < 0.5  # resting fMRI: a few components, which the training frames span
    summary = json.loads((tmp_path / "pt" / "pretrain_summary.json").read_text())
    assert summary["verdict"]["best_baseline_key"] == h["best_baseline"] == min(h["baselines"], key=h["baselines"].get)


def test_a_store_of_several_runs_holds_out_whole_runs(surface_root, tmp_path):
    from neurokit.data.dataset import PatchDataset
    from neurokit.data.selection import split_heldout

    lh = surface_root / FSA5.format(h="l")
    runs = [SurfaceRun(lh, "010188", "02", r, frames=(lo, lo + 6)) for r, lo in (("1", 0), ("2", 40), ("3", 80))]
    st = write_surface_store(tmp_path / "runs.h5", runs, SurfaceRecipe(grid="ico6/ico1", tubelet=3))
    h = split_heldout(PatchDataset(st), 0.3, seed=1)
    held, train = set(h.held.meta("run").astype(str)), set(h.train.meta("run").astype(str))
    assert len(held) == 1 and len(train) == 2 and not held & train  # round(0.3 × 3) = 1 run, whole
    assert h.unit == "runs" and h.apart == "whole runs" and h.gap_frames is None
    assert len(h.train) + len(h.held) == 6  # nothing dropped: no gap needed between recordings
