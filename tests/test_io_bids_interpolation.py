"""BIDS bad-channel interpolation at the edges (issue 19 item 12): refused from too few good neighbours, good
channels without positions named and left out of the fit."""

import mne
import numpy as np
import pytest

from neurokit._utils.errors import DataFileError
from neurokit.geometry.channels import montage_1005
from neurokit.io.bids import MIN_GOOD_NEIGHBOURS, read_bids_eeg

mne_bids = pytest.importorskip("mne_bids")

CHANNELS = ["C3", "Cz", "C4", "Fz", "Pz", "Oz", "Xref"]  # Xref: an EEG channel without a 10-05 position


def _bids(tmp_path, bads):
    rng = np.random.default_rng(0)
    info = mne.create_info(CHANNELS, 200.0, "eeg")
    raw = mne.io.RawArray(rng.normal(0, 20e-6, (len(CHANNELS), 200 * 20)), info, verbose="error")
    edf = tmp_path / "src.edf"
    mne.export.export_raw(edf, raw, fmt="edf", verbose="error")
    src = mne.io.read_raw_edf(edf, verbose="error")
    src.info["line_freq"] = 50
    bp = mne_bids.BIDSPath(subject="01", task="rest", datatype="eeg", root=tmp_path / "bids")
    mne_bids.write_raw_bids(src, bp, overwrite=True, verbose="error")
    mne_bids.mark_channels(bp, ch_names=bads, status="bad", descriptions=["test"] * len(bads), verbose="error")
    return bp.fpath


def test_too_few_good_neighbours_refused(tmp_path):
    path = _bids(tmp_path, ["C3", "Cz", "C4", "Fz", "Pz"])  # Oz alone (and Xref, without position) left
    with pytest.raises(DataFileError) as err:
        read_bids_eeg(path)
    msg = str(err.value)
    assert str(path) in msg and "'C3', 'Cz', 'C4', 'Fz', 'Pz'" in msg
    assert (
        "only 1 good EEG channel(s) with a sensor position ['Oz']" in msg and f"at least {MIN_GOOD_NEIGHBOURS}" in msg
    )
    assert "without a sensor position: ['Xref']" in msg
    raw = read_bids_eeg(path, interpolate_bads=False)  # the way out the message gives
    assert raw.info["bads"] == ["C3", "Cz", "C4", "Fz", "Pz"]


def test_good_channel_without_position_is_named_and_left_out(tmp_path):
    path = _bids(tmp_path, ["C3"])
    with pytest.warns(
        RuntimeWarning, match=r"good channels \['Xref'\] have no sensor position.*interpolated from the 5"
    ):
        raw = read_bids_eeg(path)
    assert raw.info["bads"] == [] and "Xref" in raw.ch_names
    src = mne.io.read_raw_edf(tmp_path / "src.edf", preload=True, verbose="error")
    # Xref keeps its own signal; C3 is MNE's spline from the five placed channels
    np.testing.assert_allclose(raw.get_data(picks=["Xref"]), src.get_data(picks=["Xref"]), atol=1e-9)
    ref = src.copy().pick(["C3", "Cz", "C4", "Fz", "Pz", "Oz"]).set_montage(montage_1005())
    ref.info["bads"] = ["C3"]
    ref.interpolate_bads(reset_bads=True, verbose="error")
    np.testing.assert_allclose(raw.get_data(picks=["C3"]), ref.get_data(picks=["C3"]), rtol=1e-6, atol=1e-12)
