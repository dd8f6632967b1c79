"""A label repeated in one file (C3, C3) is a name clash like T3/T7: refused naming the file and the label,
skipped by --skip-bad; normalize_names=False reads it with MNE's numbered names."""

from __future__ import annotations

import numpy as np
import pytest

import neurokit
from edf_build import write_edf
from neurokit._utils.errors import DataFileError


def _sine(n_ch, sfreq=200, seconds=10):
    t = np.arange(sfreq * seconds) / sfreq
    return np.tile(20 * np.sin(2 * np.pi * 10 * t), (n_ch, 1))


@pytest.mark.parametrize("labels", [["C3", "C3", "Cz"], ["C3", "EEG C3-REF", "C3", "Cz"]])
def test_repeated_label_is_a_clash(tmp_path, labels):
    f = tmp_path / "rep.edf"
    write_edf(f, _sine(len(labels)), 200, labels)
    with pytest.raises(DataFileError, match=r"rep\.edf: channels \['C3', .*'C3'\] all become C3") as exc:
        neurokit.read_eeg(f)
    assert "C3-0" not in str(exc.value)


def test_repeated_label_reads_with_own_names(tmp_path):
    f = tmp_path / "rep.edf"
    write_edf(f, _sine(3), 200, ["C3", "C3", "Cz"])
    with pytest.warns(RuntimeWarning):
        raw = neurokit.read_eeg(f, normalize_names=False)
    assert raw.ch_names == ["C3-0", "C3-1", "Cz"]


def test_repeated_nonstandard_label_still_reads(tmp_path):
    f = tmp_path / "rep.edf"
    write_edf(f, _sine(3), 200, ["C3", "Xyz", "Xyz"])
    with pytest.warns(RuntimeWarning):
        raw = neurokit.read_eeg(f)
    assert raw.ch_names[0] == "C3" and len(set(raw.ch_names)) == 3
