"""EEG already at its rate inside a mixed-rate EDF (issue 35, item 5): EEG at 200 Hz beside a 1000-Hz ECG was read
at 1000 Hz by MNE and resampled back (a half-sample shift, up to 14 µV off the file's samples). The EEG is now read at
its own rate, the other signals left out and said."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

edfio = pytest.importorskip("edfio")


def _mixed(path, seconds=20):
    t = np.arange(200 * seconds) / 200
    eeg = [30 * np.sin(2 * np.pi * (5 + i) * t + i) for i in range(3)]
    sig = [
        edfio.EdfSignal(
            x, sampling_frequency=200, label=f"EEG {c}", physical_dimension="uV", physical_range=(-100, 100)
        )
        for x, c in zip(eeg, ["C3", "Cz", "C4"])
    ]
    t1k = np.arange(1000 * seconds) / 1000
    sig.append(edfio.EdfSignal(500 * np.sin(2 * np.pi * 1.2 * t1k), sampling_frequency=1000, label="ECG",
                               physical_dimension="uV", physical_range=(-1000, 1000)))  # fmt: skip
    edfio.Edf(sig).write(path)
    return np.stack(eeg)  # µV, as constructed


def test_eeg_is_read_at_its_own_rate(tmp_path):
    from neurokit.io.eeg import read_eeg

    want = _mixed(tmp_path / "mixed.edf")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        raw = read_eeg(tmp_path / "mixed.edf", preload=True)
    assert raw.info["sfreq"] == 200.0 and raw.ch_names == ["C3", "Cz", "C4"]
    assert np.abs(raw.get_data() * 1e6 - want).max() < 0.01  # the file's own samples (16-bit steps of 0.003 µV)
    assert any("signals at other rates left out (ECG 1000 Hz); the EEG is read at its own 200 Hz" in str(w.message)
               for w in caught)  # fmt: skip


@pytest.mark.slow
def test_prepare_stores_the_files_samples(tmp_path, prepare_folder):
    root = tmp_path / "d"
    root.mkdir()
    want = _mixed(root / "sub-01_rec.edf")
    raw_recipe = dict(sfreq=200.0, l_freq=None, h_freq=None, line_freq=None, reference=None, scale=1e4, window_s=4.0)
    st = prepare_folder(root, "*.edf", raw_recipe)
    got = np.concatenate([np.asarray(st.patches(i)).reshape(3, 800) for i in range(len(st))], axis=1)
    assert len(st) == 5 and np.abs(got * 100 - want).max() < 0.01


def test_eeg_at_two_rates_is_said(tmp_path):
    """EEG channels at two rates are resampled by MNE to the faster one: said, naming the rates and channels."""
    from neurokit.io.eeg import read_eeg

    t2, t1 = np.arange(200 * 10) / 200, np.arange(100 * 10) / 100
    sig = [edfio.EdfSignal(20 * np.sin(2 * np.pi * 5 * t2), sampling_frequency=200, label="EEG C3",
                           physical_dimension="uV", physical_range=(-100, 100)),
           edfio.EdfSignal(20 * np.sin(2 * np.pi * 5 * t1), sampling_frequency=100, label="EEG Cz",
                           physical_dimension="uV", physical_range=(-100, 100))]  # fmt: skip
    edfio.Edf(sig).write(tmp_path / "two.edf")
    with pytest.warns(RuntimeWarning, match=r"EEG channels at several rates \(100 Hz: EEG Cz; 200 Hz: EEG C3\)"):
        read_eeg(tmp_path / "two.edf")
