"""Reading EEG in every format MNE reads, channel-name normalisation, and bad input."""

import numpy as np
import pytest

import neurokit
from neurokit._utils.errors import DataFileError
from neurokit._utils.hashing import file_sha256
from neurokit.geometry.channels import normalize_ch_name

EEGMMIDB = "MNE-eegbci-data/files/eegmmidb/1.0.0"


@pytest.mark.parametrize(
    "label, expected",
    [
        ("Fc5.", "FC5"),
        ("Cz..", "Cz"),
        ("Fp1.", "Fp1"),
        ("EEG T3-REF", "T7"),
        ("T4", "T8"),
        ("T5", "P7"),
        ("T6", "P8"),
        ("EEG FP1-LE", "Fp1"),
        ("AFz.", "AFz"),
    ],
)
def test_normalize_ch_name(label, expected):
    assert normalize_ch_name(label) == (expected, True)


def test_nonstandard_label_kept():
    assert normalize_ch_name("EEG 000") == ("EEG 000", False)


def test_eegmmidb_names_and_annotations(eeg_root):
    raw = neurokit.read_eeg(eeg_root / EEGMMIDB / "S001/S001R04.edf")
    assert len(raw.ch_names) == 64 and raw.info["sfreq"] == 160.0
    assert raw.ch_names[:3] == ["FC5", "FC3", "FC1"] and "T7" in raw.ch_names and "Iz" in raw.ch_names
    assert not raw.preload  # lazy
    desc = sorted(set(raw.annotations.description))
    assert desc == ["T0", "T1", "T2"]
    assert np.count_nonzero(raw.annotations.description != "T0") == 15
    ren = raw.info["temp"]["neurokit_renames"]
    assert ren.renamed["Fc5."] == "FC5" and not ren.nonstandard


def test_eegmmidb_checksums(eeg_root):
    folder = eeg_root / EEGMMIDB
    sums = dict(
        line.split()[::-1] for line in (folder / "SHA256SUMS_S001.txt").read_text().splitlines() if line.strip()
    )
    for name in ("S001R04.edf", "S001R08.edf"):
        assert file_sha256(folder / "S001" / name) == sums[name]


@pytest.mark.parametrize(
    "rel, n_ch, sfreq",
    [
        ("formats/edf/subsecond_starttime.edf", 3, 512.0),
        ("formats/bdf/test_bdf_stim_channel.bdf", 3, 500.0),  # Status channel dropped
        ("formats/brainvision/bv_dig_test.vhdr", 64, 5000.0),
        ("formats/eeglab/test_raw.set", 32, 128.0),
        ("formats/fif/data_resting_EO_200Hz_raw.fif", 2, 200.0),
        ("formats/edf/chtypes_edf.edf", 34, 200.0),
    ],
)
def test_formats(eeg_root, rel, n_ch, sfreq):
    raw = neurokit.read_eeg(eeg_root / rel)
    assert len(raw.ch_names) == n_ch and raw.info["sfreq"] == sfreq
    assert set(raw.get_channel_types()) == {"eeg"}


def test_old_temporal_names_recorded(eeg_root):
    raw = neurokit.read_eeg(eeg_root / "formats/edf/subsecond_starttime.edf")
    assert raw.ch_names == ["Fp1", "F7", "T7"]
    assert raw.info["temp"]["neurokit_renames"].aliases == {"T7": "T3"}


def test_no_eeg_channels(eeg_root):
    with pytest.raises(DataFileError, match=r"test_1ch\.gdf: no EEG channels \(channel types found: ecg\)"):
        neurokit.read_eeg(eeg_root / "formats/gdf/test_1ch.gdf")


def test_annotation_only_edf(eeg_root):
    with pytest.raises(DataFileError, match="Hypnogram.edf: the file holds no signal channels"):
        neurokit.read_eeg(eeg_root / "formats/edf/SC4001EC-Hypnogram.edf")


def test_truncated_file(eeg_root, tmp_path):
    src = eeg_root / EEGMMIDB / "S001/S001R04.edf"
    bad = tmp_path / "truncated.edf"
    bad.write_bytes(src.read_bytes()[:4000])
    with pytest.raises(DataFileError, match="truncated.edf"):
        neurokit.read_eeg(bad, preload=True)


def test_missing_and_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.edf"):
        neurokit.read_eeg(tmp_path / "nope.edf")
    with pytest.raises(DataFileError, match="is a folder"):
        neurokit.read_eeg(tmp_path)


def test_partially_truncated_edf(eeg_root, tmp_path):
    """A file cut after the header but mid-data: MNE would silently infer the length; we refuse, or warn."""
    src = eeg_root / EEGMMIDB / "S001/S001R04.edf"
    part = tmp_path / "half.edf"
    part.write_bytes(src.read_bytes()[:1_300_000])
    with pytest.raises(DataFileError, match=r"half.edf: truncated file: the header announces more data records"):
        neurokit.read_eeg(part)
    with pytest.warns(RuntimeWarning, match=r"half.edf: truncated file: reading only the data records present"):
        raw = neurokit.read_eeg(part, allow_truncated=True)
    assert raw.n_times == 9920  # 62 one-second records of 160 samples survive


def test_bipolar_reference_derivation_not_renamed():
    assert normalize_ch_name("EEG A2-A1") == ("EEG A2-A1", False)
    assert normalize_ch_name("EEG Fp1-A1") == ("Fp1", True)


def test_montage_subset_equals_whole_montage(eeg_root):
    """read_eeg sets the positions from the file's channels' part of the 10-05 montage: the same channel
    locations and digitisation points (kinds, idents, frames, positions) as MNE's set_montage with the whole one."""
    import mne

    from neurokit.geometry.channels import montage_1005

    path = eeg_root / "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"
    ours = neurokit.read_eeg(path)
    ref = neurokit.read_eeg(path, set_montage=False)
    ref.set_montage(montage_1005(), on_missing="ignore", verbose="error")
    assert len(ours.info["dig"]) == len(ref.info["dig"]) == 64 + 3
    for a, b in zip(ours.info["dig"], ref.info["dig"]):
        assert (a["kind"], a["ident"], a["coord_frame"]) == (b["kind"], b["ident"], b["coord_frame"])
        np.testing.assert_array_equal(a["r"], b["r"])
    for a, b in zip(ours.info["chs"], ref.info["chs"]):
        np.testing.assert_array_equal(a["loc"], b["loc"])
        assert a["coord_frame"] == b["coord_frame"]
    assert isinstance(ours.get_montage(), mne.channels.DigMontage)
