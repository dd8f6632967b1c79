"""Pictures of surface data: one frame, or a patch map, on an inflated cortical surface (nilearn, Agg).

Plotting stays apart from computing: only the CLI (``neuro plot-surface``) imports this module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurokit._utils.errors import ConfigError, DataFileError


def _packaged_fsaverage5(kind: str, hemi: str) -> str:
    from nilearn.datasets import fetch_surf_fsaverage

    fs = fetch_surf_fsaverage("fsaverage5")  # packaged with nilearn: no download
    return fs[f"{kind}_{'left' if hemi == 'L' else 'right'}"]


def template_to_fsaverage5(values: np.ndarray, hemi: str = "L", mask: np.ndarray | None = None) -> np.ndarray:
    """Values on the ico6 template resampled to nilearn's packaged fsaverage5 sphere of one hemisphere, for drawing.

    Parameters
    ----------
    values : ndarray, shape (40962,) or (40962, n_frames)
        Data on the ico6 template (hierarchical numbering).
    hemi : {"L", "R"}
        Hemisphere; the right fsaverage5 sphere is mirrored (x → −x) onto the left-hemisphere template.
    mask : ndarray of bool, shape (40962,), optional
        Valid (cortex) template vertices; fsaverage5 vertices that fall mostly outside it are 0.

    Returns
    -------
    ndarray, shape (10242,) or (10242, n_frames), float32
        The values on fsaverage5.

    Examples
    --------
    >>> import numpy as np
    >>> template_to_fsaverage5(np.ones(40962)).shape  # doctest: +SKIP
    (10242,)
    """
    from neurokit.preprocessing.surface.resample import Sphere, load_sphere, resample

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
    surf_mesh=None,
    title: str | None = None,
    cmap: str = "coolwarm",
    symmetric: bool = True,
    allow_nan: bool = False,
) -> Path:
    """Render one frame on the inflated surface, lateral and medial views, and save a PNG.

    Label data (``.dlabel.nii``, ``.label.gii``) are drawn with the label table's colours when the file has
    them, else with a qualitative colour map.

    Parameters
    ----------
    data : SurfaceData, path, or ndarray
        Surface data (a file :func:`~neurokit.io.surface.read_surface` reads; CIFTI needs ``hemi``), or
        values on the ico6 template ``(40962,)`` / ``(40962, n_frames)`` — shown on nilearn's packaged
        fsaverage5 inflated surface after resampling.
    output : str or Path
        PNG to write.
    hemi : {"L", "R"}, optional
        Hemisphere of the data (CIFTI files need it); default the file's, else ``"L"``.
    frame : int
        Frame (column) to show.
    surf_mesh : path or nilearn mesh, optional
        Inflated (or any) surface of the data's mesh and hemisphere: a file, or a nilearn ``InMemoryMesh``,
        ``FileMesh`` or ``PolyMesh`` (its part of ``hemi``); default the packaged fsaverage5 one for fsaverage5
        and template data. Required for other meshes (fs_LR 32k: the HCP
        ``S1200.L.inflated_MSMAll.32k_fs_LR.surf.gii``). Its hemisphere (GIFTI metadata, else file name, or
        the PolyMesh part) must be ``hemi``'s.
    title : str, optional
        Figure title; default the data's file name, hemisphere and frame.
    cmap : str
        Matplotlib colour map of the values (label data use their own colours).
    symmetric : bool
        Centre the colour scale on 0 (from minus to plus the 99th percentile of ``|v|``); else it starts at
        the smallest value.
    allow_nan : bool
        Read files with NaN/inf frames (shown as gaps).

    Returns
    -------
    Path
        The PNG written.

    Raises
    ------
    DataFileError
        Mesh and data disagree in vertex count; no packaged surface for the mesh; a geometry file given as
        data (no data frames); a ``surf_mesh`` of the other hemisphere; a frame with no finite value.
    ConfigError
        ``frame`` out of range.

    Examples
    --------
    >>> plot_surface(patch_map("ico2"), "patches.png", symmetric=False)  # doctest: +SKIP
    PosixPath('patches.png')
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    from neurokit.io.surface import normalize_hemi

    h = normalize_hemi(hemi) if hemi else None
    v, mask, mesh, source, h, cmap, symmetric = _frame_values(data, h, frame, allow_nan, cmap, symmetric)
    surf_mesh = _checked_mesh(surf_mesh, mesh, h, len(v), source)
    if mask is not None and len(mask) == len(v):
        v = np.where(mask, v, np.nan)
    if not np.isfinite(v).any():
        raise DataFileError(f"{source}: frame {frame} holds no finite value to draw")
    return _draw_views(
        surf_mesh, v, h, cmap, symmetric, title or f"{Path(source).name} — hemisphere {h}, frame {frame}", Path(output)
    )


def _frame_values(data, h, frame, allow_nan, cmap, symmetric):
    """One frame of ``data`` as float64 on its mesh (template data resampled to fsaverage5).

    Returns ``(values, mask, mesh, source, hemi, cmap, symmetric)``; label data get their label colours.
    """
    from neurokit.io.surface import SurfaceData, read_surface

    label_colors = None
    if isinstance(data, (str, Path)):
        path = Path(data)
        data = read_surface(data, h, allow_nan=allow_nan)
        if data.kind == "label":
            label_colors = _label_colors(path, frame)
    if isinstance(data, SurfaceData) and data.n_frames == 0:
        raise DataFileError(
            f"{data.path}: a surface geometry file ({data.kind}) with no data frames; give a data file to plot and "
            "pass this surface as surf_mesh="
        )
    if isinstance(data, SurfaceData) and data.kind == "label":
        cmap, symmetric = label_colors or "tab20", False
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
        raise ConfigError(
            f"frame={frame} out of range: {source} has {values.shape[1]} frames (0…{values.shape[1] - 1})"
        )
    v = values[:, frame].astype(np.float64)
    if mesh == "ico6":
        v = template_to_fsaverage5(v, h, mask)
        mesh = "fsaverage5"
    return v, mask, mesh, source, h, cmap, symmetric


def _checked_mesh(surf_mesh, mesh: str, h: str, n_vertices: int, source: str):
    """The surface to draw on (given, or the packaged fsaverage5 one), checked against the data; a nilearn mesh."""
    from nilearn.surface import InMemoryMesh

    from neurokit.io.surface import read_geometry

    if surf_mesh is None:
        if mesh != "fsaverage5":
            raise DataFileError(
                f"{source}: no packaged inflated surface for mesh {mesh!r}; pass surf_mesh= (the inflated surface of that mesh, "
                f"hemisphere {h}; fs_LR 32k: S1200.{h}.inflated_MSMAll.32k_fs_LR.surf.gii)"
            )
        surf_mesh = _packaged_fsaverage5("infl", h)
    try:
        geo = read_geometry(surf_mesh, h)
    except DataFileError as exc:
        raise DataFileError(f"surf_mesh= {exc}; give an inflated .surf.gii") from exc
    surf_name = geo.path
    if geo.n_vertices != n_vertices:
        raise DataFileError(
            f"surf_mesh='{surf_name}' has {geo.n_vertices} vertices but {source} has {n_vertices}: give the surface of the data's mesh"
        )
    if geo.hemi and geo.hemi != h:
        raise DataFileError(
            f"surf_mesh='{surf_name}' is hemisphere {geo.hemi}, but hemi='{h}': the picture would be wrong; give "
            f"the {h} surface or hemi='{geo.hemi}'"
        )
    return InMemoryMesh(geo.coords, geo.faces)  # the checked geometry, whatever it came as


def _draw_views(surf_mesh, v: np.ndarray, h: str, cmap, symmetric: bool, title: str, output: Path) -> Path:
    """Lateral and medial views of ``v`` on ``surf_mesh``, saved as the PNG ``output``."""
    import matplotlib.pyplot as plt
    from nilearn import plotting

    vmax = float(np.nanpercentile(np.abs(v), 99)) or 1.0
    vmin = -vmax if symmetric else float(np.nanmin(v))
    if not isinstance(cmap, str):  # label colours: one colour per key, keys 0…max
        vmin, vmax = -0.5, cmap.N - 0.5
    fig, axes = plt.subplots(1, 2, figsize=(9, 4), subplot_kw={"projection": "3d"})
    side = "left" if h == "L" else "right"
    for ax, view in zip(axes, ("lateral", "medial")):
        plotting.plot_surf(
            surf_mesh,
            v,
            hemi=side,
            view=view,
            cmap=cmap,
            axes=ax,
            figure=fig,
            vmin=vmin,
            vmax=vmax,
            colorbar=view == "medial",
            bg_on_data=False,
        )
    fig.suptitle(title)
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
    plt.close(fig)
    return output


def _label_colors(path: Path, frame: int = 0):
    """A ListedColormap indexed by label key from the label table of map ``frame`` of a CIFTI dlabel (each map
    has its own) or a GIFTI label file (one table); None if the file has none."""
    import nibabel as nib
    from matplotlib.colors import ListedColormap

    try:
        img = nib.load(path)
        if isinstance(img, nib.cifti2.Cifti2Image):
            table = {int(k): tuple(v[1]) for k, v in img.header.get_axis(0).label[frame].items()}
        elif isinstance(img, nib.gifti.GiftiImage):
            table = {int(lb.key): lb.rgba for lb in img.labeltable.labels}
        else:  # e.g. a plain NIfTI volume
            return None
    except Exception:  # noqa: BLE001 - fall back to a qualitative map
        return None
    if not table or min(table) < 0 or max(table) > 10000:
        return None
    colors = np.full((max(table) + 1, 4), 0.8)
    for k, rgba in table.items():
        colors[k] = [float(c) for c in rgba]
    return ListedColormap(colors)


def patch_map(grid: str | int = "ico2", seed: int = 0) -> np.ndarray:
    """Template values that colour each vertex by a shuffled id of its ico-k patch (for :func:`plot_surface`).

    Vertices on patch edges take the last patch that lists them.

    Parameters
    ----------
    grid : str or int
        The patch grid, as :func:`~neurokit.geometry.patches.parse_grid` reads it (``"ico2"``, ``"ico6/ico3"``, 2).
    seed : int
        Seed of the shuffle, which keeps neighbouring patches from getting similar colours.

    Returns
    -------
    ndarray, shape (n_template_vertices,), float64
        Patch id (0 … n_patches − 1) of each template vertex; 40,962 values on ico6.

    Raises
    ------
    ConfigError
        ``grid`` is not a patch grid.

    Examples
    --------
    >>> values = patch_map("ico2")
    >>> values.shape, int(values.max())
    ((40962,), 319)
    """
    from neurokit.geometry.patches import parse_grid, patch_table

    template, k = parse_grid(grid)
    table = patch_table(k, template)
    ids = np.random.default_rng(seed).permutation(len(table)).astype(np.float64)
    out = np.zeros(10 * 4**template + 2)
    out[table] = ids[:, None]
    return out
