"""Surface files named for what they are (issue 19 item 16): .gii.bz2 reads like .gii.gz, FreeSurfer .annot reads as
a label map and .label is named, per-vertex text tables of both hemispheres are not called parcellated, and an EEG
file given as surface data is named an EEG file."""

import bz2
import gzip

import nibabel as nib
import numpy as np
import pytest
from nibabel.gifti import GiftiDataArray, GiftiImage

from neurokit._utils.errors import DataFileError
from neurokit.io.surface import read_surface

N = 642  # fsaverage3


def test_gii_bz2_reads_like_gii_gz(tmp_path):
    vals = np.random.default_rng(0).normal(size=N).astype(np.float32)
    nib.save(GiftiImage(darrays=[GiftiDataArray(vals, intent="NIFTI_INTENT_SHAPE")]), tmp_path / "lh.thick.shape.gii")
    raw = (tmp_path / "lh.thick.shape.gii").read_bytes()
    (tmp_path / "lh.thick.shape.gii.bz2").write_bytes(bz2.compress(raw))
    (tmp_path / "lh.thick.shape.gii.gz").write_bytes(gzip.compress(raw))
    a, b = read_surface(tmp_path / "lh.thick.shape.gii.bz2"), read_surface(tmp_path / "lh.thick.shape.gii.gz")
    np.testing.assert_array_equal(a.data[:, 0], vals)
    np.testing.assert_array_equal(a.data, b.data)
    assert a.hemi == "L" and a.mesh == "fsaverage3"


def test_annot_reads_as_label_map(tmp_path):
    labels = (np.arange(N) % 3).astype(np.int32)
    labels[:10] = -1
    ctab = np.array([[25, 5, 25, 0, 0], [25, 100, 40, 0, 0], [125, 100, 160, 0, 0]], dtype=np.int32)
    nib.freesurfer.write_annot(
        tmp_path / "lh.test.annot", labels, ctab, [b"unknown", b"bankssts", b"cuneus"], fill_ctab=True
    )
    sd = read_surface(tmp_path / "lh.test.annot")
    assert sd.kind == "label" and sd.hemi == "L" and sd.mesh == "fsaverage3"
    np.testing.assert_array_equal(sd.data[:, 0], labels)
    assert sd.label_table == {0: "unknown", 1: "bankssts", 2: "cuneus", -1: "unknown"}


def test_fs_label_file_is_named(tmp_path):
    rows = "\n".join(f"{v}  1.0  2.0  3.0 0.000000" for v in range(5))
    (tmp_path / "lh.V1.label").write_text(f"#!ascii label  , from subject fsaverage vox2ras=TkReg\n5\n{rows}\n")
    with pytest.raises(
        DataFileError,
        match=r"lh.V1.label: a FreeSurfer label file: the vertex list of one region "
        r"\(5 vertices\), not a value per vertex",
    ):
        read_surface(tmp_path / "lh.V1.label")


def test_two_hemisphere_table_is_per_vertex(tmp_path):
    p = tmp_path / "myelin_fsLR32k.txt"
    np.savetxt(p, np.zeros((64984, 2)))
    with pytest.raises(
        DataFileError,
        match=r"64984 rows.*both hemispheres of fs_LR_32k \(2 × 32,492\): per-vertex "
        r"data, not parcellated",
    ) as err:
        read_surface(p)
    assert "parcel/label lists" not in str(err.value)


def test_eeg_file_is_named(eeg_root, tmp_path):
    with pytest.raises(
        DataFileError, match=r"S001R04.edf: an EDF/BDF EEG recording, not cortical-surface data.*read_eeg"
    ):
        read_surface(eeg_root / "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf")
    renamed = tmp_path / "lh.data.func"  # an EDF under a surface-like name: its header says what it is
    renamed.write_bytes((eeg_root / "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf").read_bytes()[:20000])
    with pytest.raises(DataFileError, match="an EDF/BDF EEG recording"):
        read_surface(renamed)
