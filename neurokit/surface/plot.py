"""Pictures of surface data: one frame, or a patch map, on an inflated cortical surface (nilearn, Agg).

Plotting stays apart from computing: nothing else in neurokit imports this module.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .._errors import ConfigError, DataFileError


def _packaged_fsaverage5(kind: str, hemi: str) -> str:
    from nilearn.datasets import fetch_surf_fsaverage

    fs = fetch_surf_fsaverage("fsaverage5")  # packaged with nilearn: no download
    return fs[f"{kind}_{'left' if hemi == 'L' else 'right'}"]


def template_to_fsaverage5(values: np.ndarray, hemi: str = "L", mask: np.ndarray | None = None) -> np.ndarray:
    """ico6 template values ``(40962,)`` → fsaverage5 ``(10242,)`` of ``hemi`` (mirrored back for R)."""
    from .resample import Sphere, load_sphere, resample

    sph = load_sphere(_packaged_fsaverage5("sphere", hemi))
    if hemi == "R":
        sph = Sphere(sph.coords * np.array([-1.0, 1.0, 1.0]), sph.faces, sph.name + " (mirrored)")
    out, _ = resample(values, 6, sph, mask=mask)
    return out


def plot_surface(
    data,
    output: str | Path,
    *,
    hemi: str | None = None,
    frame: int = 0,
    surf_mesh: str | Path | None = None,
    title: str | None = None,
    cmap: str = "coolwarm",
    symmetric: bool = True,
) -> Path:
    """Render one frame on the inflated surface, lateral and medial views, and save a PNG.

    Parameters
    ----------
    data : SurfaceData, path, or ndarray
        Surface data (a file :func:`~neurokit.io.surface.read_surface` reads; CIFTI needs ``hemi``), or
        values on the ico6 template ``(40962,)`` / ``(40962, n_frames)`` — shown on nilearn's packaged
        fsaverage5 inflated surface after resampling.
    output : path
        PNG to write.
    hemi : {"L", "R"}, optional
    frame : int
        Frame (column) to show.
    surf_mesh : path, optional
        Inflated (or any) surface of the data's mesh and hemisphere; default the packaged fsaverage5 one
        for fsaverage5 and template data. Required for other meshes (fs_LR 32k: the HCP
        ``S1200.L.inflated_MSMAll.32k_fs_LR.surf.gii``).

    Returns
    -------
    Path of the PNG.

    Raises
    ------
    DataFileError
        Mesh and data disagree in vertex count; no packaged surface for the mesh.
    ConfigError
        ``frame`` out of range.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from nilearn import plotting

    from ..io.surface import SurfaceData, normalize_hemi, read_surface

    h = normalize_hemi(hemi) if hemi else None
    if isinstance(data, (str, Path)):
        data = read_surface(data, h)
    if isinstance(data, SurfaceData):
        h = h or data.hemi or "L"
        values, mask, mesh, source = data.data, data.mask, data.mesh, str(data.path)
    else:
        values = np.asarray(data)
        values = values[:, None] if values.ndim == 1 else values
        mask, mesh, source, h = None, "ico6", "template data", h or "L"
        if values.shape[0] != 40962:
            raise DataFileError(f"array data must be on the ico6 template (40962 vertices), got {values.shape[0]}")
    if not 0 <= frame < values.shape[1]:
        raise ConfigError(f"frame {frame} out of range: {source} has {values.shape[1]} frames")
    v = values[:, frame].astype(np.float64)
    if mesh == "ico6":
        v = template_to_fsaverage5(v, h, mask)
        mesh = "fsaverage5"
    if surf_mesh is None:
        if mesh != "fsaverage5":
            raise DataFileError(f"{source}: no packaged inflated surface for mesh {mesh!r}; pass surf_mesh=<path>")
        surf_mesh = _packaged_fsaverage5("infl", h)
    n_mesh = len(read_surface(surf_mesh).coords) if Path(str(surf_mesh)).exists() else None
    if n_mesh is not None and n_mesh != len(v):
        raise DataFileError(f"surface {surf_mesh} has {n_mesh} vertices but {source} has {len(v)}")
    if mask is not None and len(mask) == len(v):
        v = np.where(mask, v, np.nan)
    vmax = float(np.nanpercentile(np.abs(v), 99)) or 1.0
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), subplot_kw={"projection": "3d"})
    side = "left" if h == "L" else "right"
    for ax, view in zip(axes, ("lateral", "medial")):
        plotting.plot_surf(
            surf_mesh, v, hemi=side, view=view, cmap=cmap, axes=ax, figure=fig,
            vmin=-vmax if symmetric else np.nanmin(v), vmax=vmax, colorbar=view == "medial",
            bg_on_data=False,
        )
    fig.suptitle(title or f"{Path(source).name} — hemisphere {h}, frame {frame}")
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
    plt.close(fig)
    return output


def patch_map(grid: str | int = "ico2", seed: int = 0) -> np.ndarray:
    """ico6 template values ``(40962,)`` colouring each vertex by a shuffled id of its ico-k patch
    (vertices on patch edges take the last patch listing them)."""
    from .patches import parse_grid, patch_table

    template, k = parse_grid(grid)
    table = patch_table(k, template)
    ids = np.random.default_rng(seed).permutation(len(table)).astype(np.float64)
    out = np.zeros(10 * 4**template + 2)
    out[table] = ids[:, None]
    return out
