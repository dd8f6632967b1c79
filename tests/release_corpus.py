"""Small corpora in the published layouts of the datasets CBraMod is judged on, and the release's recipes computed
with MNE/scipy calls in the release's order (github.com/wjq-learning/CBraMod @ b9e9610), for the card tests."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np

#: the 16 TCP derivations, in the release's order (10-05 names)
TCP = [
    "Fp1-F7", "F7-T7", "T7-P7", "P7-O1", "Fp2-F8", "F8-T8", "T8-P8", "P8-O2",
    "Fp1-F3", "F3-C3", "C3-P3", "P3-O1", "Fp2-F4", "F4-C4", "C4-P4", "P4-O2",
]  # fmt: skip
#: TUH's old names of four electrodes
OLD = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6"}
#: the electrodes of a TUH '01_tcp_ar' file, as TUH labels them (with two the montage does not use)
TUH_REF = [f"EEG {OLD.get(c, c).upper()}-REF" for c in sorted({c for d in TCP for c in d.split("-")})] + [
    "EEG A1-REF",
    "EEG CZ-REF",
]


def signals(n_ch: int, sf: float, seconds: float, seed: int, line: float = 60.0) -> np.ndarray:
    """Distinct EEG-like signals in volts: noise, a 10-Hz rhythm, mains at ``line`` Hz and a slow drift."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(sf * seconds))) / sf
    x = rng.normal(size=(n_ch, t.size)) * 10e-6
    x += 20e-6 * np.sin(2 * np.pi * (8 + seed % 5) * t + rng.uniform(0, 6, size=(n_ch, 1)))
    x += 30e-6 * np.sin(2 * np.pi * line * t) + 50e-6 * t / seconds
    return x


def write_edf(path: Path, names: list[str], sf: float, seconds: float, seed: int, line: float = 60.0) -> Path:
    """An EDF of :func:`signals` with channel labels ``names`` (through MNE's exporter)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = mne.io.RawArray(signals(len(names), sf, seconds, seed, line), mne.create_info(names, sf, "eeg"))
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")
    return path


def tcp(raw_uv: np.ndarray, ch_names: list[str]) -> np.ndarray:
    """The 16 TCP derivations of ``raw_uv`` whose channels are TUH-labelled (``EEG FP1-REF``)."""
    idx = {c: i for i, c in enumerate(ch_names)}

    def ch(name):
        return raw_uv[idx[f"EEG {OLD.get(name, name).upper()}-REF"]]

    return np.stack([ch(a) - ch(b) for a, b in (d.split("-") for d in TCP)])


def tuh_release(path: Path, line: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
    """The release's TUAB/TUEV signal steps on one EDF: read, resample 200 Hz, 0.3-75 Hz, notch ``line``, µV,
    TCP derivations: ``(16, n)`` µV and the 200-Hz time axis."""
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    raw.resample(200, verbose="error")
    raw.filter(l_freq=0.3, h_freq=75, verbose="error")
    raw.notch_filter(line, verbose="error")
    return tcp(raw.get_data(units="uV"), raw.ch_names), raw.times


def store_windows(st, run: str) -> np.ndarray:
    """The windows of one recording (meta ``run``) of store ``st``, in onset order, as ``(n, C, n_patches·200)``."""
    runs = st.meta["run"].astype(str)
    idx = np.flatnonzero(runs == run)
    idx = idx[np.argsort(st.meta["onset"][idx], kind="stable")]
    return np.stack([np.asarray(st.patches(int(i))).reshape(st.sample_shape[0], -1) for i in idx])


def close(got: np.ndarray, want: np.ndarray, tol: float = 1e-3) -> float:
    """Largest difference as a share of ``want``'s RMS (asserted below ``tol`` by the caller)."""
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.abs(got - want).max() / np.sqrt((want**2).mean()))


def finetune_tiny(store: Path, out: Path) -> str:
    """``neuro finetune`` on a card's store with tiny settings (1 epoch, 1 layer, batch 8, the pooled head) and
    everything else from the card (the release's lr, weight decay, dropout, clip…); its output, checked: exit 0,
    the card's settings said, the test metrics of the card's kind printed."""
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    args = ["finetune", str(store), "-o", str(out), "--epochs", "1", "--batch-size", "8", "--n-layers", "1",
            "--head", "avgpool", "--no-baselines", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "settings from the store's card" in r.output and "lr_backbone 0.0001" in r.output, r.output
    assert "weight_decay 0.05" in r.output and "clip_grad 1.0" in r.output, r.output
    return r.output
