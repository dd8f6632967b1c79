"""neurokit.simulate.fmri checks what nibabel loads (issue 20 item 3)."""

import nibabel as nib
import numpy as np
import pytest

from neurokit._utils.errors import DataFileError
from neurokit.simulate.fmri import surface_smoother


def _tetra(path):
    coords = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0], [-1, -1, -1]], np.float32)
    faces = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]], np.int32)
    img = nib.gifti.GiftiImage(
        darrays=[
            nib.gifti.GiftiDataArray(coords, "NIFTI_INTENT_POINTSET"),
            nib.gifti.GiftiDataArray(faces, "NIFTI_INTENT_TRIANGLE"),
        ]
    )
    nib.save(img, path)
    return path


def test_surface_smoother_averages_each_vertex_with_its_neighbours(tmp_path):
    s = surface_smoother(_tetra(tmp_path / "t.surf.gii")).toarray()
    np.testing.assert_allclose(s, np.full((4, 4), 0.25))  # every vertex of a tetrahedron neighbours the others


def test_surface_smoother_refuses_a_file_that_is_not_gifti(tmp_path):
    path = tmp_path / "vol.nii"
    nib.save(nib.Nifti1Image(np.zeros((2, 2, 2), np.float32), np.eye(4)), path)
    with pytest.raises(DataFileError, match=r"vol\.nii: not a GIFTI surface"):  # was: AttributeError (agg_data)
        surface_smoother(path)
