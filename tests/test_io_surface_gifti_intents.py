"""GIFTI files with data arrays of several intents (issue 19 item 13): frames only from time-series, shape,
statistic or float NONE arrays; label, vector and mesh arrays never become frames."""

import nibabel as nib
import numpy as np
import pytest
from nibabel.gifti import GiftiDataArray, GiftiImage

from neurokit._utils.errors import DataFileError
from neurokit.geometry.icosphere import icosphere
from neurokit.io.surface import read_geometry, read_surface

N = 162  # ico2


def _save(tmp_path, arrays, name="lh.mixed.func.gii"):
    img = GiftiImage(darrays=[GiftiDataArray(a, intent=i, datatype=dt) for a, i, dt in arrays])
    p = tmp_path / name
    nib.save(img, p)
    return p


def _series(k, rng):
    return [(rng.normal(size=N).astype(np.float32), "NIFTI_INTENT_TIME_SERIES", "NIFTI_TYPE_FLOAT32") for _ in range(k)]


def test_label_and_vector_arrays_are_not_frames(tmp_path):
    rng = np.random.default_rng(0)
    ts = _series(6, rng)
    label = (np.arange(N) % 3).astype(np.int32)
    vec = rng.normal(size=(N, 3)).astype(np.float32)
    p = _save(
        tmp_path,
        [*ts, (label, "NIFTI_INTENT_LABEL", "NIFTI_TYPE_INT32"), (vec, "NIFTI_INTENT_VECTOR", "NIFTI_TYPE_FLOAT32")],
    )
    with pytest.warns(RuntimeWarning, match=r"#6 NIFTI_INTENT_LABEL, #7 NIFTI_INTENT_VECTOR .*are ignored"):
        sd = read_surface(p)
    assert sd.kind == "series" and sd.data.shape == (N, 6)
    np.testing.assert_array_equal(sd.data, np.stack([a for a, _, _ in ts], axis=1))


def test_mesh_with_time_series_reads_its_frames(tmp_path):
    rng = np.random.default_rng(1)
    ico = icosphere(2)
    ts = _series(4, rng)
    p = _save(
        tmp_path,
        [
            (ico.vertices.astype(np.float32), "NIFTI_INTENT_POINTSET", "NIFTI_TYPE_FLOAT32"),
            (ico.faces.astype(np.int32), "NIFTI_INTENT_TRIANGLE", "NIFTI_TYPE_INT32"),
            *ts,
        ],
    )
    sd = read_surface(p)
    assert sd.kind == "series" and sd.data.shape == (N, 4) and sd.mesh == "ico2"
    np.testing.assert_array_equal(sd.data[:, 3], ts[3][0])
    geo = read_geometry(p)  # the same file still gives its mesh
    assert geo.coords.shape == (N, 3) and geo.faces.shape == (320, 3)


def test_float_none_and_shape_are_data_int_none_is_not(tmp_path):
    rng = np.random.default_rng(2)
    a = rng.normal(size=N).astype(np.float32)
    b = rng.normal(size=N).astype(np.float32)
    idx = np.arange(N, dtype=np.int32)
    p = _save(
        tmp_path,
        [
            (a, "NIFTI_INTENT_NONE", "NIFTI_TYPE_FLOAT32"),
            (b, "NIFTI_INTENT_SHAPE", "NIFTI_TYPE_FLOAT32"),
            (idx, "NIFTI_INTENT_NODE_INDEX", "NIFTI_TYPE_INT32"),
        ],
        name="lh.maps.shape.gii",
    )
    with pytest.warns(RuntimeWarning, match="#2 NIFTI_INTENT_NODE_INDEX"):
        sd = read_surface(p)
    assert sd.kind == "scalar"
    np.testing.assert_array_equal(sd.data, np.stack([a, b], axis=1))


def test_labels_alone_and_vectors_alone(tmp_path):
    label = (np.arange(N) % 4).astype(np.int32)
    sd = read_surface(_save(tmp_path, [(label, "NIFTI_INTENT_LABEL", "NIFTI_TYPE_INT32")], name="lh.l.label.gii"))
    assert sd.kind == "label" and sd.data.shape == (N, 1)
    vec = np.ones((N, 3), np.float32)
    with pytest.raises(DataFileError, match=r"without a data array of a time-series.*#0 NIFTI_INTENT_VECTOR"):
        read_surface(_save(tmp_path, [(vec, "NIFTI_INTENT_VECTOR", "NIFTI_TYPE_FLOAT32")], name="lh.v.func.gii"))
