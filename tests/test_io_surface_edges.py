"""Surface files at the edges (issue 7, items 8 and 10): per-map dlabel tables, the fs_LR 59k mesh, nilearn
mesh objects, parcellated files, and right-hemisphere mirroring decided by what the sphere is."""

from __future__ import annotations

import shutil

import nibabel as nib
import numpy as np
import pytest
from nibabel import cifti2
from typer.testing import CliRunner

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from neurokit.io.surface import SurfaceData, read_surface
from neurokit.preprocessing.surface.patching import to_template
from neurokit.preprocessing.surface.resample import load_sphere

HCP = "hcp_fs_LR32k"
ICO = "metrics-lab_ico"
SULC = f"{HCP}/S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii"
FSA5_RH = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.rh.first100TR.mgz"
runner = CliRunner()


def flat(text: str) -> str:
    return "".join(text.split())


# ------------------------------------------------------------------------------- 8a: dlabel tables per map
def test_dlabel_keeps_one_label_table_per_map(tmp_path):
    from neurokit.plotting.surface import _label_colors

    bm = cifti2.BrainModelAxis.from_surface(np.arange(200), 32492, "CortexLeft")
    tables = [
        {0: ("???", (0, 0, 0, 0)), 1: ("V1", (1, 0, 0, 1)), 2: ("V2", (0, 1, 0, 1))},
        {0: ("???", (0, 0, 0, 0)), 1: ("Brodmann 4", (0, 0, 1, 1)), 3: ("Brodmann 6", (1, 1, 0, 1))},
    ]
    ax = cifti2.LabelAxis(["retinotopic", "brodmann"], tables)
    data = np.zeros((2, 200), np.float32)
    data[0, :100], data[0, 100:] = 1, 2
    data[1, :50], data[1, 50:] = 3, 1
    path = tmp_path / "two_maps.dlabel.nii"
    nib.Cifti2Image(data, header=(ax, bm)).to_filename(path)
    sd = read_surface(path, "L")
    assert sd.kind == "label" and sd.frame_names == ["retinotopic", "brodmann"]
    assert sd.label_tables == [{0: "???", 1: "V1", 2: "V2"}, {0: "???", 1: "Brodmann 4", 3: "Brodmann 6"}]
    assert sd.label_table == sd.label_tables[0]
    # map 1's keys are named by map 1's table
    assert [sd.label_tables[1][int(k)] for k in np.unique(sd.data[sd.mask, 1])] == ["Brodmann 4", "Brodmann 6"]
    # and drawn in map 1's colours
    np.testing.assert_allclose(_label_colors(path, 1)(1), (0, 0, 1, 1))
    np.testing.assert_allclose(_label_colors(path, 0)(1), (1, 0, 0, 1))


# ------------------------------------------------------------------------------------- 8b: fs_LR 59k
def _latlong_sphere(n_rings: int, n_lon: int) -> tuple[np.ndarray, np.ndarray]:
    """A radius-100 sphere of ``2 + n_rings·n_lon`` vertices (two poles, rings of latitude), outward triangles."""
    theta = np.pi * np.arange(1, n_rings + 1) / (n_rings + 1)
    phi = 2 * np.pi * np.arange(n_lon) / n_lon
    t, p = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
    v = 100 * np.concatenate([[[0, 0, 1]], ring, [[0, 0, -1]]])
    idx = 1 + np.arange(n_rings * n_lon).reshape(n_rings, n_lon)
    nxt = np.roll(idx, -1, axis=1)
    top = np.stack([np.zeros(n_lon, int), idx[0], nxt[0]], 1)
    bottom = np.stack([np.full(n_lon, len(v) - 1), nxt[-1], idx[-1]], 1)
    a, b, c, d = idx[:-1], nxt[:-1], idx[1:], nxt[1:]
    quads = np.concatenate([np.stack([a, c, d], -1).reshape(-1, 3), np.stack([a, d, b], -1).reshape(-1, 3)])
    return v.astype(np.float32), np.concatenate([top, quads, bottom]).astype(np.int32)


@pytest.fixture(scope="module")
def fs_lr_59k(tmp_path_factory):
    """A 59,292-vertex left sphere and a 3-frame dtseries of the left cortex on it (HCP 7T 1.6 mm layout)."""
    d = tmp_path_factory.mktemp("lr59k")
    v, f = _latlong_sphere(245, 242)  # 2 + 245·242 = 59,292 vertices
    meta = {"AnatomicalStructurePrimary": "CortexLeft", "GeometricType": "Spherical"}
    gii = nib.gifti.GiftiImage(
        darrays=[
            nib.gifti.GiftiDataArray(v, intent="NIFTI_INTENT_POINTSET", meta=meta),
            nib.gifti.GiftiDataArray(f, intent="NIFTI_INTENT_TRIANGLE"),
        ]
    )
    sphere = d / "L.sphere.59k_fs_LR.surf.gii"
    nib.save(gii, str(sphere))
    cortex = np.arange(1000, 59292)  # a "medial wall" of 1000 vertices left out, as in HCP files
    bm = cifti2.BrainModelAxis.from_surface(cortex, 59292, "CortexLeft")
    x = np.stack([v[cortex, 2] * (k + 1) for k in range(3)]).astype(np.float32)  # frame k: (k+1)·z
    data = d / "tfMRI_MOVIE1_7T_AP_Atlas_1.6mm_MSMAll_hp2000_clean.dtseries.nii"
    nib.Cifti2Image(x, header=(cifti2.SeriesAxis(0, 1.0, 3), bm)).to_filename(data)
    return data, sphere


def test_fs_lr_59k_read_and_prepare_with_spheres(fs_lr_59k, tmp_path):
    data, sphere = fs_lr_59k
    sd = read_surface(data, "L")
    assert sd.mesh == "fs_LR_59k" and sd.n_vertices == 59292 and sd.mask.sum() == 58292
    # without spheres: the error names the flag and the 59k sphere files
    r = runner.invoke(
        app,
        [
            "prepare",
            "hcp7t_movie",
            "-f",
            str(data),
            "--mesh",
            "fs_LR_59k",
            "--hemi",
            "L",
            "-o",
            str(tmp_path / "no.h5"),
        ],
    )
    out = flat(r.output)
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "nopackagedregisteredsphereformesh'fs_LR_59k'" in out and "--sphere-l" in out
    assert "L.sphere.59k_fs_LR.surf.gii" in out and not (tmp_path / "no.h5").exists()
    # with the 59k sphere: --mesh fs_LR_59k works end to end
    store = tmp_path / "lr59k.h5"
    r = runner.invoke(
        app,
        [
            "prepare",
            "hcp7t_movie",
            "-f",
            str(data),
            "--mesh",
            "fs_LR_59k",
            "--hemi",
            "L",
            "--sphere-l",
            str(sphere),
            "-o",
            str(store),
        ],
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(store)
    assert st.attrs["mesh"] == "fs_LR_59k" and len(st) == 1 and st.sample_shape == (3, 1280, 45)
    # z-scored frames of k·z are all the same map: the resampled height z, z-scored over cortex
    x = np.asarray(st.patches(0))
    np.testing.assert_allclose(x[0], x[2], atol=1e-4)
    assert np.corrcoef(x[0].ravel(), x[1].ravel())[0, 1] > 0.999


def test_mesh_error_and_mesh_option_agree(tmp_path, fs_lr_59k):
    _, sphere = fs_lr_59k
    bm = cifti2.BrainModelAxis.from_surface(np.arange(5000), 50000, "CortexLeft")
    odd = tmp_path / "odd.dtseries.nii"
    nib.Cifti2Image(np.ones((3, 5000), np.float32), header=(cifti2.SeriesAxis(0, 1.0, 3), bm)).to_filename(odd)
    with pytest.raises(DataFileError, match=r"50000 vertices match no known surface mesh .*--mesh NAME --sphere-l"):
        read_surface(odd, "L")
    assert read_surface(odd, "L", mesh="my50k").mesh == "my50k"
    r = runner.invoke(app, ["prepare", "hcp7t_movie", "-f", str(odd), "--mesh", "my50k", "-o", str(tmp_path / "o.h5")])
    assert r.exit_code != 0 and "--meshNAMEwith--sphere-l/--sphere-r" in flat(r.output)
    # the option the read error names is accepted (here it then finds the sphere's vertex count wrong)
    r = runner.invoke(
        app,
        [
            "prepare",
            "hcp7t_movie",
            "-f",
            str(odd),
            "--mesh",
            "my50k",
            "--hemi",
            "L",
            "--sphere-l",
            str(sphere),
            "-o",
            str(tmp_path / "o.h5"),
        ],
    )
    assert r.exit_code != 0 and "50000vertices(my50k),butsphere" in flat(r.output)


# ------------------------------------------------------------------------------- 8c: nilearn mesh objects
def _fsa5(kind: str, side: str):
    from nilearn.datasets import fetch_surf_fsaverage
    from nilearn.surface import InMemoryMesh

    path = fetch_surf_fsaverage("fsaverage5")[f"{kind}_{side}"]  # packaged with nilearn: no download
    coords, faces = nib.load(path).agg_data()
    return InMemoryMesh(coords, faces), path


def test_nilearn_meshes_accepted_as_spheres_and_refused_for_the_wrong_hemisphere(surface_root):
    from nilearn.surface import FileMesh, PolyMesh

    (lm, l_path), (rm, r_path) = _fsa5("sphere", "left"), _fsa5("sphere", "right")
    assert np.array_equal(load_sphere(lm).coords, load_sphere(l_path).coords) and load_sphere(lm).hemi is None
    both = PolyMesh(left=lm, right=rm)
    assert load_sphere(both, "R").hemi == "R" and load_sphere(PolyMesh(right=rm)).hemi == "R"
    assert load_sphere(FileMesh(r_path)).hemi == "R"  # read from its file, as a path is
    with pytest.raises(ConfigError, match="pass hemi='L' or hemi='R'"):
        load_sphere(both)
    with pytest.raises(DataFileError, match="not a sphere"):
        load_sphere(_fsa5("infl", "left")[0])
    right = read_surface(surface_root / FSA5_RH)
    right.data = right.data[:, :2]
    out, mask = to_template(right, both)  # the R part is taken
    ref, ref_mask = to_template(right, r_path)
    np.testing.assert_array_equal(out, ref)
    assert np.array_equal(mask, ref_mask) and 0.85 < mask.mean() < 0.95
    with pytest.raises(DataFileError, match=r"hemisphere R, but sphere nilearn PolyMesh part left is hemisphere L"):
        to_template(right, PolyMesh(left=lm))
    with pytest.raises(DataFileError, match=r"hemisphere R, but sphere .*left.* is hemisphere L"):
        to_template(right, FileMesh(l_path))


def test_plot_surface_takes_nilearn_meshes(surface_root, tmp_path):
    from nilearn.surface import PolyMesh

    from neurokit.plotting.surface import plot_surface

    infl = PolyMesh(left=_fsa5("infl", "left")[0], right=_fsa5("infl", "right")[0])
    png = plot_surface(surface_root / FSA5_RH, tmp_path / "r.png", hemi="R", surf_mesh=infl)
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(DataFileError, match="surf_mesh='nilearn PolyMesh part left' is hemisphere L, but hemi='R'"):
        plot_surface(surface_root / FSA5_RH, tmp_path / "x.png", hemi="R", surf_mesh=PolyMesh(left=infl.parts["left"]))
    assert not (tmp_path / "x.png").exists()


# ------------------------------------------------------------------------------- 8d: parcellated files
def _ptseries(path):
    bm = cifti2.BrainModelAxis.from_surface(np.arange(100), 32492, "CortexLeft")
    parcels = cifti2.ParcelsAxis.from_brain_models([("V1", bm[:60]), ("V2", bm[60:])])
    nib.Cifti2Image(np.ones((4, 2), np.float32), header=(cifti2.SeriesAxis(0, 0.72, 4), parcels)).to_filename(path)
    return path


def test_parcellated_files_refused_with_what_to_use(surface_root, tmp_path):
    p = _ptseries(tmp_path / "rest.ptseries.nii")
    with pytest.raises(
        DataFileError,
        match=r"rest\.ptseries\.nii: a CIFTI-2 parcellated time series file .*one value "
        r"per parcel, not per vertex.*\.dtseries\.nii",
    ):
        read_surface(p, "L")
    hidden = shutil.copy(p, tmp_path / "renamed.dtseries.nii")  # parcels under a dense name: told by content
    with pytest.raises(
        DataFileError, match=r"renamed\.dtseries\.nii: a parcellated CIFTI-2 file \(its columns are 2 parcels"
    ):
        read_surface(hidden, "L")
    pconn = tmp_path / "conn.pconn.nii"
    shutil.copy(p, pconn)
    with pytest.raises(DataFileError, match="parcel-to-parcel connectivity file .*parcellated"):
        read_surface(pconn)
    txt = surface_root / "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01_confounds.txt"
    with pytest.raises(
        DataFileError, match=r"confounds\.txt: a plain-text table \(\d+ rows × \d+ columns\).*parcellated"
    ):
        read_surface(txt)
    csv = tmp_path / "schaefer400_timeseries"  # no extension: told by content
    csv.write_text(
        "\n".join(",".join(f"{v:.3f}" for v in row) for row in np.random.default_rng(0).normal(size=(5, 400)))
    )
    with pytest.raises(DataFileError, match=r"plain-text table \(5 rows × 400 columns\)"):
        read_surface(csv)
    per_vertex = tmp_path / "lh.thickness.1D"
    np.savetxt(per_vertex, np.ones((10242, 2)))
    with pytest.raises(DataFileError, match=r"10242 rows × 2 columns\), one row per vertex of fsaverage5: .*GIFTI"):
        read_surface(per_vertex)
    r = runner.invoke(app, ["prepare", "fsaverage5_rest", "-f", str(p), "-o", str(tmp_path / "s.h5")])
    assert r.exit_code != 0 and "parcellatedtimeseries" in flat(r.output) and "Traceback" not in r.output


# ------------------------------------------------------------------------------------ 10: mirroring
def test_right_mirroring_follows_the_sphere_not_its_name(surface_root, tmp_path, monkeypatch):
    x = np.random.default_rng(1).standard_normal((40962, 2)).astype(np.float32)
    right = SurfaceData(data=x, hemi="R", mesh="ico6", mask=np.ones(40962, bool), path=tmp_path / "r.func.gii")
    ico_r = surface_root / ICO / "ico-6.R.surf.gii"
    # ico-6.R is the exact x-mirror of ico-6.L (= the generated template): mirrored, vertex i is template vertex i
    assert np.array_equal(
        load_sphere(ico_r).mirrored().coords, load_sphere(surface_root / ICO / "ico-6.L.surf.gii").coords
    )
    monkeypatch.chdir(surface_root / ICO)
    out, mask = to_template(right, "ico-6.R.surf.gii")  # relative path, name starting "ico"
    np.testing.assert_array_equal(out, x)
    assert mask.all()
    for name in ("sphere.surf.gii", "ico-6.L.surf.gii", "lh.whatever.surf.gii"):  # names say nothing; metadata R
        np.testing.assert_array_equal(to_template(right, shutil.copy(ico_r, tmp_path / name))[0], x)
    np.testing.assert_array_equal(to_template(right, 6)[0], x)  # the template itself: already on it
    # a real right sphere under an "ico" name is still mirrored
    fsa5_r = read_surface(surface_root / FSA5_RH)
    fsa5_r.data = fsa5_r.data[:, :2]
    _, r_path = _fsa5("sphere", "right")
    np.testing.assert_array_equal(
        to_template(fsa5_r, shutil.copy(r_path, tmp_path / "ico6_like.gii.gz"))[0], to_template(fsa5_r, r_path)[0]
    )
    # not mirroring is a real permutation of the right template's vertices
    raw, _ = to_template(right, ico_r, mirror_right=False)
    assert not np.allclose(raw, x)
