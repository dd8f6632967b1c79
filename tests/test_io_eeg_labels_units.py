"""Smaller EEG reading edges of issue 19 item 16: whole-label channel re-typing, non-voltage units, non-EDF
``.rec`` files, epoched EEGLAB sets, bipolar labels under an average reference."""

import mne
import numpy as np
import pytest
import scipy.io
from edf_build import write_edf

import neurokit
from neurokit._utils.errors import DataFileError
from neurokit.cards.recipes import EEGRecipe
from neurokit.io.eeg import non_eeg_type
from neurokit.preprocessing.eeg.windows import preprocess_raw

SF = 200
T = np.arange(4 * SF) / SF
SINE = 20 * np.sin(2 * np.pi * 10 * T)  # µV


def test_retyping_takes_whole_words():
    assert non_eeg_type("EKG-L") == "ecg" and non_eeg_type("EEG EKG1-REF") == "ecg"
    assert non_eeg_type("Resp chest") == "resp" and non_eeg_type("STI 014") == "stim"
    # a word inside another word names nothing: TEMP in TEMPORAL, POS in POSITION, LEG in LEGACY
    assert non_eeg_type("TEMPORAL1") is None and non_eeg_type("POSITION") is None and non_eeg_type("LEGACY") is None
    assert non_eeg_type("Cz") is None and non_eeg_type("E15") is None


def test_typed_file_keeps_its_eeg_channel_named_pulse(tmp_path):
    info = mne.create_info(["C3", "pulse", "C4", "EKG"], SF, ["eeg", "eeg", "eeg", "ecg"])
    raw = mne.io.RawArray(np.vstack([SINE, SINE, SINE, SINE]) * 1e-6, info, verbose="error")
    raw.save(tmp_path / "typed_raw.fif", verbose="error")
    got = neurokit.read_eeg(tmp_path / "typed_raw.fif")
    assert got.ch_names == ["C3", "pulse", "C4"]  # the file says pulse is EEG: kept; EKG is typed ECG by the file
    # a FIF file types its channels: all EEG means EEG, whatever the labels
    fif = mne.io.RawArray(
        np.vstack([SINE] * 3) * 1e-6, mne.create_info(["C3", "pulse", "C4"], SF, "eeg"), verbose="error"
    )
    fif.save(tmp_path / "all_eeg_raw.fif", verbose="error")
    assert neurokit.read_eeg(tmp_path / "all_eeg_raw.fif").ch_names == ["C3", "pulse", "C4"]
    # an EDF types nothing: the label is all there is (documented: whole words of non-EEG signals)
    p = write_edf(tmp_path / "untyped.edf", np.vstack([SINE] * 3), SF, ["C3", "Pulse", "TEMPORAL1"])
    assert neurokit.read_eeg(p).ch_names == ["C3", "TEMPORAL1"]


def test_non_voltage_units_mark_non_eeg_channels(tmp_path):
    labels = ["C3", "C4", "AccX", "Skin", "SpO2x", "Rate"]
    p = write_edf(
        tmp_path / "acc.bdf", np.vstack([SINE] * 6), SF, labels, units=["uV", "uV", "G", "degC", "%", "bpm"], bdf=True
    )
    with pytest.warns(
        RuntimeWarning,
        match=r"channels \['AccX', 'Skin', 'SpO2x', 'Rate'\] have non-voltage physical "
        r"units .*read as non-EEG",
    ):
        raw = neurokit.read_eeg(p, preload=True)
    assert raw.ch_names == ["C3", "C4"]
    np.testing.assert_allclose(np.abs(raw.get_data()).max(axis=1), 20e-6, rtol=1e-3)


def test_rec_that_is_not_edf_is_named(tmp_path):
    p = tmp_path / "scan.REC"
    p.write_bytes(np.arange(4096, dtype="<i2").tobytes())  # a Philips REC holds raw image samples
    with pytest.raises(DataFileError, match=r"scan.REC: a .rec file that is not EDF.*Philips PAR/REC"):
        neurokit.read_eeg(p)
    edf = write_edf(tmp_path / "a.edf", np.vstack([SINE, SINE]), SF, ["C3", "C4"])
    rec = tmp_path / "a.rec"
    rec.write_bytes(edf.read_bytes())  # an EDF named .rec still reads
    assert neurokit.read_eeg(rec).ch_names == ["C3", "C4"]


def test_epoched_eeglab_set_is_named(tmp_path):
    eeg = {
        "setname": "ep",
        "nbchan": 3.0,
        "trials": 5.0,
        "pnts": 200.0,
        "srate": 200.0,
        "xmin": 0.0,
        "xmax": 0.995,
        "data": np.zeros((3, 200, 5)),
        "chanlocs": np.array([]),
        "event": np.array([]),
        "epoch": np.array([]),
        "icawinv": np.array([]),
        "icasphere": np.array([]),
        "icaweights": np.array([]),
    }
    p = tmp_path / "ep.set"
    scipy.io.savemat(p, {"EEG": eeg}, appendmat=False)
    with pytest.raises(
        DataFileError, match=r"ep.set: an epoched EEGLAB dataset \(5 epochs\).*read_epochs_eeglab"
    ) as err:
        neurokit.read_eeg(p)
    assert "truncated" not in str(err.value)


def test_bipolar_labels_are_not_average_referenced(tmp_path):
    p = write_edf(tmp_path / "bip.edf", np.vstack([SINE] * 3), SF, ["Fp1-F7", "F7-T3", "T3-T5"])
    raw = neurokit.read_eeg(p)
    avg = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, reference="average")
    with pytest.raises(DataFileError, match=r"\['Fp1-F7', 'F7-T3', 'T3-T5'\] are bipolar derivations.*reference: null"):
        preprocess_raw(raw, avg)
    kept = preprocess_raw(neurokit.read_eeg(p), EEGRecipe(l_freq=None, h_freq=None, line_freq=None, reference=None))
    np.testing.assert_allclose(kept.get_data()[0, :SF] * 1e6, SINE[:SF], atol=0.01)
