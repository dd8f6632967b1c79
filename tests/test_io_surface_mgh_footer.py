"""FreeSurfer MGH/MGZ files with a large footer (issue 19 item 14): the tags after the data are walked, not
capped at 64 KiB; bytes that are no tags are still a damaged header."""

import gzip
import struct

import nibabel as nib
import numpy as np
import pytest

from neurokit._utils.errors import DataFileError
from neurokit.io.surface import read_surface

N, T = 642, 12  # fsaverage3, 12 frames


def _mgh(tmp_path, tail: bytes, name="lh.run.mgh"):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(N, 1, 1, T)).astype(np.float32)
    img = nib.MGHImage(data, np.eye(4))
    img.header["tr"] = 2000.0
    p = tmp_path / name
    nib.save(img, tmp_path / "base.mgh")
    body = (tmp_path / "base.mgh").read_bytes() + tail
    p.write_bytes(gzip.compress(body) if name.endswith(".mgz") else body)
    return p, data.reshape(N, T)


def _frame_tags(n_frames, size=8000):
    """FreeSurfer's per-frame tag (TAG_MRI_FRAME = 42): int32 id, int64 length, payload; plus a command line (3)."""
    out = b""
    for _ in range(n_frames):
        out += struct.pack(">iq", 42, size) + bytes(size)
    cmd = b"mri_vol2surf --src run.nii.gz --hemi lh"
    return out + struct.pack(">iq", 3, len(cmd)) + cmd


@pytest.mark.parametrize("name", ["lh.run.mgh", "lh.run.mgz"])
def test_large_valid_footer_reads(tmp_path, name):
    tail = _frame_tags(T)  # ~96 KB of tags, beyond the old 64 KiB cap
    assert len(tail) > 65536
    p, data = _mgh(tmp_path, tail, name)
    sd = read_surface(p)
    assert sd.kind == "series" and sd.tr == 2.0 and sd.mesh == "fsaverage3"
    np.testing.assert_array_equal(sd.data, data)


@pytest.mark.parametrize("name", ["lh.run.mgh", "lh.run.mgz"])
def test_bytes_that_are_no_tags_are_refused(tmp_path, name):
    junk = np.random.default_rng(1).normal(size=30000).astype(">f4").tobytes()  # 120 KB of float data
    p, _ = _mgh(tmp_path, junk, name)
    with pytest.raises(DataFileError, match="no MGH footer.*a damaged header"):
        read_surface(p)
    cut = _frame_tags(T)[:-5]  # a tag cut short: its length runs past the end of the file
    p, _ = _mgh(tmp_path, cut, name)
    with pytest.raises(DataFileError, match="past the end of the file"):
        read_surface(p)
