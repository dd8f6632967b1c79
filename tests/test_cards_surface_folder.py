"""A generic surface card (issue 36 item 5): a CIFTI dense time series of another study prepares under its own
name — the surface_folder card, no HCP name, licence or citation stamped on it — with its spheres as options."""

from __future__ import annotations

import shutil

import numpy as np

import pytest
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore

pytestmark = pytest.mark.slow


def test_surface_folder_prepares_a_cifti_series_under_its_own_name(surface_root, tmp_path):
    data = tmp_path / "study"
    data.mkdir()
    shutil.copy(surface_root / "cifti/sub-MSC01_test.dtseries.nii", data)
    sph = surface_root / "hcp_fs_LR32k"
    args = ["prepare", "surface_folder", "--data-root", str(data), "-o", str(tmp_path / "s.h5"),
            "--sphere-l", str(sph / "S1200.L.sphere.32k_fs_LR.surf.gii"),
            "--sphere-r", str(sph / "S1200.R.sphere.32k_fs_LR.surf.gii")]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    body = st.info.card_body
    assert st.info.card == "surface_folder" and "HCP" not in str(body.get("title")) + str(body.get("licence"))
    # 5 frames → 3 tubelets of 3 frames at a hop of 1, both hemispheres; subject from the BIDS name
    assert len(st) == 6 and set(st.meta["subject"].astype(str)) == {"MSC01"}


def test_surface_folder_takes_the_subject_of_freesurfer_hemisphere_files(surface_root, tmp_path):
    """FreeSurfer lh./rh. files: one subject with both hemispheres, not subjects named 'lh' and 'rh'."""
    import nibabel as nib

    src = sorted((surface_root / "fsaverage5_rest").glob("*.mgz"))
    assert len(src) == 2
    data = tmp_path / "fs"
    data.mkdir()
    (data / "bert" / "surf").mkdir(parents=True)  # and a subject's FreeSurfer folder: bert/surf/?h.rest.mgz
    for k, name in enumerate(("{}.sub01.mgz", "{}.sub02.mgz", "bert/surf/{}.rest.mgz")):
        for p in src:  # 4 frames of the run each (other frames for each subject: not duplicates)
            img = nib.load(p)
            frames = np.asarray(img.dataobj)[..., 4 * k : 4 * k + 4]
            nib.save(nib.MGHImage(frames, img.affine, img.header), data / name.format(p.name.split(".")[2]))
    r = CliRunner().invoke(app, ["prepare", "surface_folder", "--data-root", str(data), "-o", str(tmp_path / "s.h5")])
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    subjects = st.meta["subject"].astype(str)
    # 4 frames → 2 tubelets per hemisphere file, 2 hemisphere files per subject
    assert sorted(set(subjects)) == ["bert", "sub01", "sub02"]
    assert [int((subjects == s).sum()) for s in ("bert", "sub01", "sub02")] == [4, 4, 4]
    # the two hemisphere files of one scan are one run (its frames held out together), not runs 'lh.x' and 'rh.x'
    runs = {(s, str(r)) for s, r in zip(subjects, st.meta["run"].astype(str))}
    assert len(runs) == 3 and {h for h in st.meta["run"].astype(str)} & {"lh.sub01", "rh.sub01"} == set()
