"""EEG pipeline speed, each figure beside a baseline measured in the same run.

1. Preprocessing throughput (seconds of EEG per second of wall time), EDF → patch store, against a plain
   MNE read → filter → notch → resample loop over the same files (no windowing, no store).
2. Pretraining samples per second of CBraMod (masked-patch loss, forward + backward + AdamW; CPU time with
   one thread, wall time otherwise), the two models' steps alternating, against the same weights in the release's structure (wjq-learning/CBraMod): criss-cross layers
   with two ``nn.MultiheadAttention`` modules on permuted copies, ``nn.Dropout``, and the release's patch
   embedding; checked equal in eval mode and, dropout off, in the training loss and gradients.

Usage::

    python benchmarks/eeg_pipeline.py --data-root ../shared/data/eeg [--subjects 1-3] [--layers 2] [--device cpu]
    python benchmarks/eeg_pipeline.py --only pretrain --threads 1   # per-core training-step ratio
    python benchmarks/eeg_pipeline.py --only layer --threads 1      # one criss-cross layer
    python benchmarks/eeg_pipeline.py --only preprocessing --n-jobs 1 --min-ratio 1.8   # the CI gate
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's neurokit, not an installed one

import torch
import torch.nn as nn
import torch.nn.functional as F


#: largest difference allowed between the store's windows and the plain MNE loop's data, in 100 µV units: a few
#: float32 steps of the largest samples (prepare's float32 FFTs; tests/test_preprocessing_eeg_filtering.py)
STORE_TOLERANCE = 4e-6


class _MIFiles:
    """The EEGMMIDB left/right imagery runs of ``subjects`` through the physionet_mi card: ``entries``, their
    total ``seconds`` of EEG and the card's ``recipe``; :meth:`rate` times a call, :meth:`prepare` runs ``prepare``."""

    def __init__(self, data_root: Path, subjects: list[int], n_jobs: int) -> None:
        import mne

        from neurokit.cards import load_card

        self.data_root, self.subjects, self.n_jobs = data_root, subjects, n_jobs
        self.card = load_card("physionet_mi")
        self.entries = self.card.files(data_root, "left_right_imagery", subjects=subjects, download=False)
        self.seconds = sum(mne.io.read_raw_edf(e.path, verbose="error").times[-1] for e in self.entries)
        self.recipe = self.card.recipe()

    def rate(self, fn, clock=time.perf_counter) -> float:
        """Seconds of EEG per second of ``fn()`` by ``clock`` (default: wall time)."""
        t = clock()
        fn()
        return self.seconds / (clock() - t)

    def prepare(self, out: Path) -> None:
        from neurokit.pipelines.prepare import prepare

        prepare(
            self.card,
            out,
            data_root=self.data_root,
            task="left_right_imagery",
            subjects=self.subjects,
            progress=False,
            overwrite=True,
            n_jobs=self.n_jobs,
        )


def preprocessing_clock(n_jobs: int):
    """CPU time of this process for one-process runs (``n_jobs=1``: other jobs on a shared machine disturb it
    far less than wall time), wall time with workers (whose CPU time this process does not see)."""
    return time.process_time if n_jobs == 1 else time.perf_counter


def bench_preprocessing(
    data_root: Path, subjects: list[int], n_jobs: int = 1, repeats: int = 3
) -> tuple[float, float, list[float], float, float, list[float]]:
    """Seconds of EEG per second (:func:`preprocessing_clock`: CPU time with ``n_jobs=1``, wall time with
    workers): ``prepare`` (``n_jobs`` workers), a plain MNE loop and MNE's read alone, interleaved.

    The plain loop applies the card's recipe (PhysioNet-MI: average reference, 0.3 Hz high-pass, 60 Hz notch,
    resample to 200 Hz) with MNE's ``Raw`` methods and their defaults, one file after another, and keeps the
    result in memory (no windows, no store). The read-only pass is ``mne.io.read_raw_edf(preload=True)`` of
    each file: the floor of any EDF → store path. Returns the medians (ours, plain loop), the per-repeat
    ratios ours / plain loop, the largest difference between the store's windows and the plain loop's data
    (in the store's units), the median read-only rate and the per-repeat ratios of prepare's time to the
    read-only time. One untimed round of all three comes first (imports, the files in the page cache); each
    timed ``prepare`` writes a new store (deleting the last one's file is not part of preparing)."""
    import mne
    import numpy as np

    from neurokit.store.patch_store import PatchStore

    mi = _MIFiles(data_root, subjects, n_jobs)
    entries, recipe = mi.entries, mi.recipe
    clock = preprocessing_clock(n_jobs)

    def plain_one(path):
        raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
        raw.set_eeg_reference("average", projection=False, verbose="error")
        raw.filter(recipe.l_freq, recipe.h_freq, verbose="error")
        raw.notch_filter([recipe.line_freq], verbose="error")
        return raw.resample(recipe.sfreq, verbose="error")

    def plain() -> None:
        for e in entries:
            plain_one(e.path)

    def read_only() -> None:
        for e in entries:
            mne.io.read_raw_edf(e.path, preload=True, verbose="error")

    r_ours, r_base, r_read = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        read_only(), plain(), mi.prepare(Path(tmp) / "s.h5")  # untimed: imports, file cache, allocator
        for i in range(repeats):  # each store a new file: removing the last one is not preparing
            r_read.append(mi.rate(read_only, clock))
            r_base.append(mi.rate(plain, clock))
            r_ours.append(mi.rate(lambda out=Path(tmp) / f"s{i}.h5": mi.prepare(out), clock))
        # same output: every window of the first file, store vs the plain loop (store units: 100 µV)
        st = PatchStore(Path(tmp) / f"s{repeats - 1}.h5")
        ref = plain_one(entries[0].path).get_data()
        shape, diff = st.sample_shape, 0.0
        for i in range(int(st.attrs["sources"][0]["n_windows"])):
            s = int(round(float(st.meta["onset"][i]) * recipe.sfreq))
            want = (ref[:, s : s + shape[1] * shape[2]] * recipe.scale).reshape(shape)
            diff = max(diff, float(np.abs(st.patches(i) - want).max()))
        st.close()
    return (
        statistics.median(r_ours),
        statistics.median(r_base),
        [float(o / b) for o, b in zip(r_ours, r_base)],
        diff,
        statistics.median(r_read),
        [float(r / o) for o, r in zip(r_ours, r_read)],
    )


def bench_floor(data_root: Path, subjects: list[int], repeats: int = 3) -> dict[str, float]:
    """CPU seconds (medians of ``repeats``, one untimed round first) of what any EDF → store path equal to
    MNE's results must do for these files, each part alone: MNE's read (``read_raw_edf(preload=True)``); the
    FFTs that MNE's plan dictates, at its lengths and in float32 (``prepare``'s one pass per recording: two
    real FFTs of resampling's padded length and one inverse of its output length, on random data of each
    file's shape); writing the store's windows (h5py, one window per chunk, as ``PatchStoreWriter``); the
    SHA-256 of each file; and the whole ``prepare``. The sum of the first four is the floor of prepare / read
    that no change of neurokit's own code can go below while the store stays equal to MNE's data."""
    import hashlib

    import h5py
    import mne
    import numpy as np
    from scipy import fft

    from neurokit.store.patch_store import PatchStore
    from neurokit.preprocessing.eeg.filtering import resample_plan

    mi = _MIFiles(data_root, subjects, 1)
    with tempfile.TemporaryDirectory() as tmp:
        mi.prepare(Path(tmp) / "s.h5")
        st = PatchStore(Path(tmp) / "s.h5")
        windows = [st.patches(slice(a, b)) for a, b in _source_ranges(st)]
        st.close()
    shapes = []
    for e in mi.entries:
        raw = mne.io.read_raw_edf(e.path, verbose="error")
        shapes.append((len(raw.ch_names), raw.n_times, raw.info["sfreq"]))
    rng = np.random.default_rng(0)
    inputs = [
        rng.standard_normal((8, n + sum(resample_plan(n, sf, mi.recipe.sfreq)[1]))).astype(np.float32)
        for c, n, sf in shapes
    ]

    def read() -> None:
        for e in mi.entries:
            mne.io.read_raw_edf(e.path, preload=True, verbose="error")

    def ffts() -> None:
        for (c, n, sf), x in zip(shapes, inputs):
            new_len = resample_plan(n, sf, mi.recipe.sfreq)[2]
            for _ in range(0, c, 8):  # blocks of 8 channels, as prepare
                spec = fft.rfft(x, axis=-1)
                spec += fft.rfft(x, axis=-1)
                fft.irfft(spec, new_len, axis=-1)

    def write(out: Path) -> None:
        with h5py.File(out, "w") as f:
            ds = f.create_dataset(
                "patches",
                (0, *windows[0].shape[1:]),
                np.float32,
                maxshape=(None, *windows[0].shape[1:]),
                chunks=(1, *windows[0].shape[1:]),
            )
            for w in windows:
                ds.resize(len(ds) + len(w), axis=0)
                ds[len(ds) - len(w) :] = w

    def sha() -> None:
        for e in mi.entries:
            h = hashlib.sha256()
            with open(e.path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)

    times: dict[str, list[float]] = {k: [] for k in ("read", "ffts", "write", "sha256", "prepare")}
    with tempfile.TemporaryDirectory() as tmp:
        parts = {
            "read": read,
            "ffts": ffts,
            "write": lambda i: write(Path(tmp) / f"w{i}.h5"),
            "sha256": sha,
            "prepare": lambda i: mi.prepare(Path(tmp) / f"p{i}.h5"),
        }
        for i in range(-1, repeats):  # round -1: untimed
            for name, fn in parts.items():
                t = time.process_time()
                fn(i) if name in ("write", "prepare") else fn()
                if i >= 0:
                    times[name].append(time.process_time() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _source_ranges(st) -> list[tuple[int, int]]:
    """The store's sample ranges, one per recording (in order)."""
    edges, start = [], 0
    for src in st.attrs["sources"]:
        edges.append((start, start + int(src["n_windows"])))
        start += int(src["n_windows"])
    return edges


def bench_peers(data_root: Path, subjects: list[int], n_jobs: int = 1, repeats: int = 3) -> dict[str, tuple]:
    """Seconds of EEG per wall second of ``prepare`` beside braindecode and MOABB on the same files, interleaved.

    * braindecode (``pip install braindecode``): :func:`braindecode.preprocessing.preprocess` with the card's
      steps as ``Preprocessor`` objects (the same MNE calls) over ``RawDataset`` raws, then
      ``create_windows_from_events`` (4-s windows at the T1/T2 onsets), ``n_jobs`` workers.
    * MOABB (``pip install moabb``): ``LeftRightImagery(fmin=0.3, fmax=75, resample=200, tmin=0, tmax=4)`` on
      its ``PhysionetMI`` dataset pointed at the same folder (download provider ``upstream``: no NEMAR
      look-up; the files are there). MOABB's recipe is its own (IIR band-pass, epochs), so the outputs differ.
    Returns ``{name: (median rate, median ratio prepare/peer, ratios)}``; a peer not installed is left out."""
    import os

    import mne

    mi = _MIFiles(data_root, subjects, n_jobs)
    entries, recipe = mi.entries, mi.recipe
    peers = {}
    try:
        from braindecode.datasets import BaseConcatDataset

        try:
            from braindecode.datasets import RawDataset
        except ImportError:  # braindecode < 1.0
            from braindecode.datasets import BaseDataset as RawDataset
        from braindecode.preprocessing import Preprocessor, create_windows_from_events, preprocess

        def braindecode_run():
            ds = BaseConcatDataset(
                [
                    RawDataset(mne.io.read_raw_edf(e.path, preload=True, verbose="error"), target_name=None)
                    for e in entries
                ]
            )
            preprocess(
                ds,
                [
                    Preprocessor("set_eeg_reference", ref_channels="average", projection=False, verbose="error"),
                    Preprocessor("filter", l_freq=recipe.l_freq, h_freq=recipe.h_freq, verbose="error"),
                    Preprocessor("notch_filter", freqs=[recipe.line_freq], verbose="error"),
                    Preprocessor("resample", sfreq=recipe.sfreq, verbose="error"),
                ],
                n_jobs=n_jobs,
            )
            create_windows_from_events(
                ds,
                mapping={"T1": 0, "T2": 1},
                trial_start_offset_samples=0,
                trial_stop_offset_samples=0,
                window_size_samples=800,
                window_stride_samples=800,
                preload=True,
                n_jobs=n_jobs,
            )

        peers["braindecode"] = braindecode_run
    except ImportError:
        pass
    try:
        import moabb
        from moabb.datasets import PhysionetMI
        from moabb.paradigms import LeftRightImagery

        os.environ["MNE_DATASETS_EEGBCI_PATH"] = str(data_root)
        moabb.set_download_provider("upstream")
        moabb.set_log_level("error")
        ds = PhysionetMI(imagined=True, executed=False)
        ds.feet_runs = []  # the left/right runs only (the files at hand)
        paradigm = LeftRightImagery(fmin=0.3, fmax=75.0, resample=200.0, tmin=0.0, tmax=4.0)
        peers["MOABB"] = lambda: paradigm.get_data(ds, subjects=subjects)
    except ImportError:
        pass

    import warnings

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rates = {name: [] for name in ["prepare", *peers]}
        for _ in range(repeats):
            rates["prepare"].append(mi.rate(lambda: mi.prepare(Path(tmp) / "s.h5")))
            for name, fn in peers.items():
                rates[name].append(mi.rate(fn))
    out = {}
    for name in peers:
        ratios = [float(o / b) for o, b in zip(rates["prepare"], rates[name])]
        out[name] = (statistics.median(rates[name]), statistics.median(ratios), ratios)
    out["prepare"] = (statistics.median(rates["prepare"]), 1.0, [1.0] * repeats)
    return out


class MHACrissCrossLayer(nn.Module):
    """The straightforward criss-cross layer: two nn.MultiheadAttention calls on permuted copies."""

    def __init__(self, d_model=200, nhead=8, dim_feedforward=800, dropout=0.1) -> None:
        super().__init__()
        self.self_attn_s = nn.MultiheadAttention(d_model // 2, nhead // 2, dropout=dropout, batch_first=True)
        self.self_attn_t = nn.MultiheadAttention(d_model // 2, nhead // 2, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout, self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x):
        B, C, N, D = x.shape
        h = self.norm1(x)
        xs = h[..., : D // 2].transpose(1, 2).contiguous().view(B * N, C, D // 2)
        xt = h[..., D // 2 :].contiguous().view(B * C, N, D // 2)
        xs = self.self_attn_s(xs, xs, xs, need_weights=False)[0].view(B, N, C, D // 2).transpose(1, 2)
        xt = self.self_attn_t(xt, xt, xt, need_weights=False)[0].view(B, C, N, D // 2)
        x = x + self.dropout1(torch.cat([xs, xt], dim=3))
        return x + self.dropout2(self.linear2(self.dropout(F.gelu(self.linear1(self.norm2(x))))))


class ReleasePatchEmbedding(nn.Module):
    """The release's patch embedding (wjq-learning/CBraMod ``models/cbramod.py``): the mask written into a
    clone by boolean indexing, ``contiguous`` copies, ``nn.Dropout``; parameter names as neurokit's."""

    def __init__(self, dropout: float = 0.1) -> None:
        super().__init__()
        from neurokit.models.cbramod import PatchEmbedding

        pe = PatchEmbedding(dropout=dropout)
        self.d_model = 200
        self.positional_encoding, self.mask_encoding = pe.positional_encoding, pe.mask_encoding
        self.proj_in = pe.proj_in
        self.spectral_proj = nn.Sequential(pe.spectral_proj[0], nn.Dropout(dropout))

    def forward(self, x, mask=None):
        bz, ch_num, patch_num, patch_size = x.shape
        if mask is None:
            mask_x = x
        else:
            mask_x = x.clone()
            mask_x[mask == 1] = self.mask_encoding
        mask_x = mask_x.contiguous().view(bz, 1, ch_num * patch_num, patch_size)
        patch_emb = self.proj_in(mask_x)
        patch_emb = patch_emb.permute(0, 2, 1, 3).contiguous().view(bz, ch_num, patch_num, self.d_model)
        mask_x = mask_x.contiguous().view(bz * ch_num * patch_num, patch_size)
        spectral = torch.fft.rfft(mask_x, dim=-1, norm="forward")
        spectral = torch.abs(spectral).contiguous().view(bz, ch_num, patch_num, 101)
        patch_emb = patch_emb + self.spectral_proj(spectral)
        positional_embedding = self.positional_encoding(patch_emb.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return patch_emb + positional_embedding


def release_structure(ours: nn.Module) -> nn.Module:
    """A model with the release's structure (two ``nn.MultiheadAttention`` per layer, ``nn.Dropout``, the
    release's patch embedding) holding ``ours``'s weights (the release's key names are ours)."""
    from neurokit.models import CBraMod

    cfg = ours.config
    base = CBraMod(n_layers=cfg.n_layers, dropout=cfg.dropout)
    base.patch_embedding = ReleasePatchEmbedding(cfg.dropout)
    base.encoder.layers = nn.ModuleList(MHACrissCrossLayer(dropout=cfg.dropout) for _ in range(cfg.n_layers))
    base.load_state_dict(ours.state_dict())
    return base


def _clock(device: str = "cpu"):
    """CPU time for a one-thread CPU run (other jobs on the machine disturb it less), wall time otherwise
    (CPU time would add up the threads, and their spinning)."""
    return time.process_time if device == "cpu" and torch.get_num_threads() == 1 else time.perf_counter


def _clock_name(device: str) -> str:
    return "CPU time" if _clock(device) is time.process_time else "wall time"


def bench_pretrain(
    n_layers: int, batch: int, C: int, N: int, steps: int, device: str, repeats: int = 3, compile: bool = False
) -> tuple[float, float, list[float]]:
    """Samples/s of ``CBraMod`` and of the release structure (:func:`release_structure`), their steps
    alternating, ``repeats`` passes of ``steps`` steps each; time by :func:`_clock` (CPU time with one
    thread, wall time otherwise).

    Returns the medians (ours, baseline) and the per-repeat ratios."""
    from neurokit.models import CBraMod
    from neurokit.training.objectives import masked_patch_loss

    clock = _clock(device)

    def make_step(model, compiled=False):
        model.to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
        fwd = torch.compile(model) if compiled else model
        x = torch.randn(batch, C, N, 200, device=device)
        g = torch.Generator(device=device)

        def step(i):
            g.manual_seed(i)
            loss, _ = masked_patch_loss(fwd, x, g)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()

        return step

    def timed(step, i) -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = clock()
        step(i)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return clock() - t

    torch.manual_seed(0)
    ours = CBraMod(n_layers=n_layers)
    base = release_structure(ours)
    so, sb = make_step(ours, compile), make_step(base)
    so(0), sb(0)  # warm-up (and compilation)
    r_ours, r_base = [], []
    for _ in range(repeats):
        t_ours = t_base = 0.0
        for i in range(steps):  # steps alternate: the machine's load hits both alike
            t_ours += timed(so, i)
            t_base += timed(sb, i)
        r_ours.append(steps * batch / t_ours)
        r_base.append(steps * batch / t_base)
    ratios = [o / b for o, b in zip(r_ours, r_base)]
    return statistics.median(r_ours), statistics.median(r_base), ratios


def bench_braindecode(
    n_layers: int, batch: int, C: int, N: int, steps: int, device: str, repeats: int = 3
) -> tuple[float, float, list[float]] | None:
    """Samples/s of a training step of neurokit's CBraMod and of braindecode's (``pip install braindecode``,
    the peer users would pick), steps alternating: the 12-layer encoder on ``(B, C, N·200)`` inputs, a mean
    square of its output as the loss (braindecode ships no masked-patch objective), backward, AdamW. None
    when braindecode is not installed. Returns the medians (ours, braindecode) and per-repeat ratios."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from braindecode.models import CBraMod as PeerCBraMod
    except ImportError:
        return None
    from neurokit.models import CBraMod

    clock = _clock(device)
    torch.manual_seed(0)
    ours = CBraMod(n_layers=n_layers).to(device).train()
    peer = (
        PeerCBraMod(n_outputs=2, n_chans=C, n_times=N * 200, sfreq=200, n_layer=n_layers, return_encoder_output=True)
        .to(device)
        .train()
    )
    x = torch.randn(batch, C, N, 200, device=device)

    def make_step(model, inp):
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)

        def step():
            loss = model(inp).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        return step

    so, sp = make_step(ours, x), make_step(peer, x.reshape(batch, C, N * 200))
    so(), sp()
    r_ours, r_peer = [], []
    for _ in range(repeats):
        t_o = t_p = 0.0
        for _ in range(steps):
            t = clock()
            so()
            t_o += clock() - t
            t = clock()
            sp()
            t_p += clock() - t
        r_ours.append(steps * batch / t_o)
        r_peer.append(steps * batch / t_p)
    return statistics.median(r_ours), statistics.median(r_peer), [float(o / b) for o, b in zip(r_ours, r_peer)]


def bench_layer(batch: int, C: int, N: int, steps: int, repeats: int = 3) -> tuple[float, float, list[float]]:
    """Milliseconds (:func:`_clock`) for one criss-cross layer's forward + backward in training mode (dropout
    0.1): CBraMod's and ``MHACrissCrossLayer`` (the release's), same weights, alternating, ``repeats`` passes.

    Returns the medians (ours, baseline) and the per-repeat ratios baseline / ours."""
    from neurokit.models.cbramod import CBraModConfig, CrissCrossLayer

    torch.manual_seed(0)
    ours = CrissCrossLayer(CBraModConfig()).train()
    base = MHACrissCrossLayer().train()
    base.load_state_dict(ours.state_dict())
    x = torch.randn(batch, C, N, 200, requires_grad=True)
    gy = torch.randn(batch, C, N, 200)

    clock = _clock()

    def ms(layer) -> float:
        t = clock()
        layer(x).backward(gy)
        return (clock() - t) * 1e3

    ms(ours), ms(base)  # warm-up
    t_ours, t_base = [], []
    for _ in range(repeats):
        a = b = 0.0
        for _ in range(steps):  # alternate: the machine's load hits both alike
            a += ms(ours)
            b += ms(base)
        t_ours.append(a / steps)
        t_base.append(b / steps)
    return statistics.median(t_ours), statistics.median(t_base), [b / o for o, b in zip(t_ours, t_base)]


def check_same_outputs(n_layers: int = 2) -> float:
    """Max abs difference between CBraMod and the release structure in eval mode (same weights)."""
    from neurokit.models import CBraMod

    torch.manual_seed(0)
    ours = CBraMod(n_layers=n_layers).eval()
    base = release_structure(ours).eval()
    x = torch.randn(2, 19, 4, 200)
    with torch.no_grad():
        return float((ours(x) - base(x)).abs().max())


def check_same_training_step(n_layers: int = 2, C: int = 19, N: int = 4) -> tuple[float, float]:
    """Training mode with dropout off: the masked-patch loss and every parameter's gradient of CBraMod and
    of the release structure (same weights, same mask). Returns (|Δloss|, max |Δgrad| / max |grad|)."""
    from neurokit.models import CBraMod
    from neurokit.training.objectives import masked_patch_loss

    torch.manual_seed(0)
    ours = CBraMod(n_layers=n_layers, dropout=0.0).train()
    base = release_structure(ours).train()
    x = torch.randn(4, C, N, 200)
    out = []
    for model in (ours, base):
        loss, _ = masked_patch_loss(model, x, torch.Generator().manual_seed(1))
        loss.backward()
        out.append((loss.detach(), {k: p.grad for k, p in model.named_parameters() if p.grad is not None}))
    (lo, go), (lb, gb) = out
    assert go.keys() == gb.keys(), "the two structures train different parameters"
    rel = max(float((go[k] - gb[k]).abs().max() / gb[k].abs().max().clamp_min(1e-30)) for k in go)
    return float((lo - lb).abs()), rel


def main() -> None:
    from neurokit.cards import parse_ranges

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared/data/eeg")
    ap.add_argument(
        "--only",
        nargs="*",
        default=["preprocessing", "pretrain"],
        choices=["preprocessing", "floor", "peers", "pretrain", "layer"],
        help="sections (floor: what any EDF → store path equal to MNE must do, part by part; peers: braindecode, "
        "MOABB; layer: one criss-cross layer)",
    )
    ap.add_argument("--subjects", default="1-3")
    ap.add_argument("--n-jobs", type=int, default=2, help="prepare workers (preprocessing)")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--patches", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats; medians are reported")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
    ap.add_argument("--compile", action="store_true", help="torch.compile CBraMod (not the baseline)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument(
        "--min-ratio",
        type=float,
        default=None,
        help="preprocessing: exit 1 when prepare's median ratio to the plain MNE loop of this run is below this "
        "(CI: 1.8), so a slower per-recording path is seen when it lands",
    )
    a = ap.parse_args()
    if {"preprocessing", "floor", "peers"} & set(a.only) and not a.data_root.is_dir():
        ap.error(
            f"--data-root {a.data_root}: no such folder; give the folder holding MNE-eegbci-data/ "
            "(e.g. --data-root ../shared/data/eeg), or --only pretrain layer (no recordings needed)"
        )
    if a.threads:
        torch.set_num_threads(a.threads)
    if "preprocessing" in a.only:
        ours, base, ratios, diff, read, slow = bench_preprocessing(
            a.data_root, parse_ranges(a.subjects), a.n_jobs, a.repeats
        )
        print(
            f"preprocessing EDF→store (n_jobs={a.n_jobs}, "
            f"{'CPU' if preprocessing_clock(a.n_jobs) is time.process_time else 'wall'} time): {ours:8.1f} s of "
            "EEG per s | plain MNE "
            f"read-reference-filter-notch-resample loop: {base:8.1f} | ratio {statistics.median(ratios):.2f} "
            f"(median of {[round(r, 2) for r in ratios]}) | MNE read only: {read:8.1f} | prepare time / read "
            f"time {statistics.median(slow):.2f} (median of {[round(r, 2) for r in slow]}); store vs plain "
            f"loop: max abs diff {diff:.1e} (100 µV units; bound {STORE_TOLERANCE:g})"
        )
        if diff > STORE_TOLERANCE:
            raise SystemExit(f"the store differs from the plain loop's data by {diff:.1e} > {STORE_TOLERANCE:g}")
        if a.min_ratio is not None and statistics.median(ratios) < a.min_ratio:
            raise SystemExit(
                f"preprocessing: prepare / plain MNE {statistics.median(ratios):.2f} < {a.min_ratio:g} (median of "
                f"{len(ratios)} interleaved repeats of this run): a per-recording step got slower"
            )
    if "floor" in a.only:
        t = bench_floor(a.data_root, parse_ranges(a.subjects), a.repeats)
        floor = t["read"] + t["ffts"] + t["write"] + t["sha256"]
        print(
            "floor of an EDF → store path equal to MNE's data (CPU s, medians; × MNE's read): "
            + " | ".join(f"{k} {v:.3f} s ({v / t['read']:.2f}×)" for k, v in t.items())
            + f" | read + FFTs + write + SHA-256: {floor:.3f} s ({floor / t['read']:.2f}×); prepare spends "
            f"{t['prepare'] - floor:.3f} s beyond it (header checks, names, montage, reference, fingerprints, "
            "windows, copies)"
        )
    if "peers" in a.only:
        for name, (r, ratio, ratios) in bench_peers(a.data_root, parse_ranges(a.subjects), a.n_jobs, a.repeats).items():
            if name != "prepare":
                print(
                    f"preprocessing peer {name} (n_jobs={a.n_jobs}): {r:8.1f} s of EEG per s | prepare / {name}: "
                    f"{ratio:.2f} (median of {[round(x, 2) for x in ratios]})"
                )
    if "layer" in a.only:
        ours, base, ratios = bench_layer(a.batch, a.channels, a.patches, a.steps, a.repeats)
        print(
            f"one criss-cross layer, forward + backward, training mode (B={a.batch}, C={a.channels}, "
            f"N={a.patches}, {torch.get_num_threads()} thread(s), {_clock_name(a.device)}): {ours:7.1f} ms | "
            f"release layer (two nn.MultiheadAttention): {base:7.1f} ms | ratio {statistics.median(ratios):.2f} "
            f"(median of {[round(r, 2) for r in ratios]})"
        )
    if "pretrain" in a.only:
        print(f"eval-mode outputs vs the release structure: max abs diff {check_same_outputs():.2e}")
        dl, dg = check_same_training_step()
        print(
            f"training step, dropout off, vs the release structure: |Δloss| {dl:.2e}, "
            f"max |Δgrad| / max |grad| per parameter {dg:.2e}"
        )
        ours, base, ratios = bench_pretrain(
            a.layers, a.batch, a.channels, a.patches, a.steps, a.device, a.repeats, a.compile
        )
        print(
            f"pretraining step ({a.device}, {a.layers} layers, B={a.batch}, C={a.channels}, N={a.patches}"
            f"{', compiled' if a.compile else ''}, {torch.get_num_threads()} thread(s), "
            f"{_clock_name(a.device)}): {ours:7.2f} samples/s | release structure "
            f"(two nn.MultiheadAttention, nn.Dropout): {base:7.2f} | ratio {statistics.median(ratios):.2f} "
            f"(median of {[round(r, 2) for r in ratios]})"
        )
        peer = bench_braindecode(a.layers, a.batch, a.channels, a.patches, a.steps, a.device, a.repeats)
        if peer is not None:
            ours, base, ratios = peer
            print(
                f"training step vs braindecode's CBraMod (encoder, mean-square loss, {_clock_name(a.device)}): "
                f"{ours:7.2f} samples/s | braindecode: {base:7.2f} | ratio {statistics.median(ratios):.2f} "
                f"(median of {[round(r, 2) for r in ratios]})"
            )


if __name__ == "__main__":
    main()
