"""Surface fMRI → ico6 template → patch tensors and tubelets, the input of the surface vision transformers.

Steps (Dahan et al., MIDL 2022; the tri-modal HCP-7T movie paper, arXiv 2501.16471):

1. resample one hemisphere to the ico6 template by barycentric interpolation on its registered sphere;
   the right hemisphere's sphere is mirrored (x → −x) first, so both hemispheres share the left template;
2. z-score every frame over the cortex mask (vertices outside it are 0);
3. cut into ico-k patches: ``(n_frames, n_patches, vertices_per_patch)``;
4. group ``T`` consecutive frames into tubelets ``(T, n_patches, V)`` — one stored sample each. The model
   reads the ``T`` frames as channels (``channels``: N tokens of V·T) or as frame-major tokens (``concat``).
"""

from __future__ import annotations

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.geometry.patches import extract_patches
from neurokit.preprocessing.surface.resample import (
    default_sphere,
    load_sphere,
    resample,
    sphere_hint,
)


def to_template(sd, sphere=None, *, order: int = 6, mirror_right: bool = True, threshold: float = 0.5):
    """Resample one hemisphere's :class:`~neurokit.io.surface.SurfaceData` to the ico-``order`` template.

    The right hemisphere is mirrored (x → −x) onto the left template, decided by what the sphere *is*,
    never by its file name: a sphere whose vertices are the generated (left) template's, index by index
    (:meth:`~neurokit.preprocessing.surface.resample.Sphere.is_template`), means the data are already on the template and
    are taken as they are; any other sphere of right-hemisphere data is mirrored. The metrics-lab
    ``ico-6.R.surf.gii`` is exactly the x-mirror of ``ico-6.L`` (``wb_command -surface-flip-lr``), so right
    data on it land on the template unchanged — as do right data on ``mesh="ico6"`` given without a sphere
    (taken to be numbered like ico-6.R, the only right ico6 template in use).

    Parameters
    ----------
    sd : SurfaceData
        ``data`` ``(n_vertices, n_frames)``.
    sphere : path, Sphere, SurfaceData, nilearn mesh or None
        The registered sphere of ``sd``'s mesh and hemisphere (anything
        :func:`~neurokit.preprocessing.surface.resample.load_sphere` takes); default: a packaged one
        (:func:`~neurokit.preprocessing.surface.resample.default_sphere`: fsaverage5 via nilearn, ico-k generated).
    mirror_right : bool
        Mirror a right hemisphere's sphere (x → −x) so it lands on the left template.

    Returns
    -------
    data : ndarray, shape (10·4^order+2, n_frames), float32
    mask : ndarray of bool, shape (10·4^order+2,)

    Raises
    ------
    DataFileError
        Sphere and data disagree in vertex count or hemisphere (the sphere's metadata, else its name);
        no packaged sphere for the mesh.
    """
    from neurokit.io.surface import hemi_from_name

    right = sd.hemi == "R"
    if sphere is None and sd.mesh == f"ico{order}":
        if right and not mirror_right:  # physical positions of the right template: the left one x-mirrored
            src = load_sphere(order).mirrored()
            return resample(sd.data, src, order, mask=sd.mask, threshold=threshold)
        # left data on the template; right data on the right template, whose mirror is the template itself
        return np.asarray(sd.data, dtype=np.float32), np.asarray(sd.mask, dtype=bool)
    if sphere is None:
        try:
            sphere = default_sphere(sd.mesh, sd.hemi)
        except DataFileError as exc:
            raise DataFileError(f"{sd.path}: {exc}") from exc
    src = load_sphere(sphere, sd.hemi)
    if src.n_vertices != sd.n_vertices:
        raise DataFileError(
            f"{sd.path}: {sd.n_vertices} vertices ({sd.mesh}), but sphere {src.name} has {src.n_vertices}: "
            f"the sphere does not match the data; pass the sphere of the data's mesh (spheres=; "
            f"{sphere_hint(sd.mesh, sd.hemi)})"
        )
    # the file's own metadata (GIFTI AnatomicalStructurePrimary) first, its name second
    sphere_hemi = src.hemi or hemi_from_name(src.name)
    if sphere_hemi and sd.hemi and sphere_hemi != sd.hemi:
        raise DataFileError(
            f"{sd.path}: hemisphere {sd.hemi}, but sphere {src.name} is hemisphere {sphere_hemi} (from its "
            f"{'metadata' if src.hemi else 'file name'}); pass the {sd.hemi} sphere (spheres=)"
        )
    if right and mirror_right and not src.is_template(order):
        src = src.mirrored()
    if src.is_template(order):  # vertex i is template vertex i: nothing to interpolate
        return np.asarray(sd.data, dtype=np.float32), np.asarray(sd.mask, dtype=bool)
    return resample(sd.data, src, order, mask=sd.mask, threshold=threshold)


def zscore_frames(data: np.ndarray, mask: np.ndarray, *, source: str = "data", first_frame: int = 0) -> np.ndarray:
    """Z-score every frame over the masked vertices; 0 outside the mask.

    Parameters
    ----------
    data : ndarray, shape (n_vertices, n_frames)
    mask : ndarray of bool, shape (n_vertices,)
    source : str
        Named in errors.
    first_frame : int
        Index of ``data``'s first frame in its run (errors name run frames when ``data`` is a block).

    Returns
    -------
    ndarray, shape (n_vertices, n_frames), float32 (a new array; ``data`` is not changed)

    Works in float32 on one copy of the masked values (mean and variance accumulated in float64, per
    frame); callers bound the memory by passing blocks of frames.

    Raises
    ------
    DataFileError
        NaN/inf values, or frames that are constant over the mask (zero variance).
    """
    m = np.asarray(mask, dtype=bool)
    if not m.any():
        raise DataFileError(f"{source}: empty cortex mask")
    cx = np.asarray(data)[m].astype(np.float32, copy=False)  # the one copy
    finite = np.isfinite(cx).all(axis=0)
    if not finite.all():
        frames = np.flatnonzero(~finite) + first_frame
        raise DataFileError(f"{source}: frames {frames[:10].tolist()} hold NaN/inf on cortex")
    cx -= cx.mean(axis=0, dtype=np.float64).astype(np.float32)
    sd = np.sqrt(np.mean(np.square(cx), axis=0, dtype=np.float64))  # two-pass: no cancellation
    flat = np.flatnonzero(sd < 1e-12)
    if len(flat):
        raise DataFileError(
            f"{source}: frames {(flat[:10] + first_frame).tolist()} are constant over the cortex mask (cannot z-score)"
        )
    cx /= sd.astype(np.float32)
    out = np.zeros(np.shape(data), dtype=np.float32)
    out[m] = cx
    return out


def frame_patches(data: np.ndarray, grid_order: int, template_order: int = 6) -> np.ndarray:
    """Template data ``(n_template_vertices, n_frames)`` → patch tensor ``(n_frames, n_patches, V)`` float32."""
    return np.ascontiguousarray(np.moveaxis(extract_patches(data, grid_order, template_order), -1, 0), dtype=np.float32)


def tubelets(x: np.ndarray, size: int, stride: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Group frames into tubelets.

    Parameters
    ----------
    x : ndarray, shape (n_frames, n_patches, V)
    size : int
        Frames per tubelet ``T``.
    stride : int, optional
        Frames between tubelet starts (default ``size``). Trailing frames that do not fill a tubelet are
        dropped.

    Returns
    -------
    tubes : ndarray, shape (n_tubelets, T, n_patches, V)
    starts : ndarray, shape (n_tubelets,), int64
        First frame of each tubelet.
    """
    stride = stride or size
    n = x.shape[0]
    starts = np.arange(0, n - size + 1, stride, dtype=np.int64)
    if len(starts) == 0:
        return np.zeros((0, size, *x.shape[1:]), dtype=x.dtype), starts
    idx = starts[:, None] + np.arange(size)[None, :]
    return x[idx], starts


def surface_frames(sd, recipe: SurfaceRecipe | None = None, sphere=None) -> tuple[np.ndarray, np.ndarray]:
    """One hemisphere's :class:`~neurokit.io.surface.SurfaceData` → per-frame patch tensor on the template.

    Returns
    -------
    frames : ndarray, shape (n_frames, n_patches, V), float32
        Resampled, z-scored (if the recipe says so) and cut into the recipe's patches.
    mask : ndarray of bool, shape (n_template_vertices,)
        Cortex on the template.
    """
    recipe = recipe or SurfaceRecipe()
    data, mask = to_template(
        sd, sphere, order=recipe.template_order, mirror_right=recipe.mirror_right, threshold=recipe.mask_threshold
    )
    if recipe.zscore:
        data = zscore_frames(data, mask, source=str(sd.path))
    return frame_patches(data, recipe.grid_order, recipe.template_order), mask


def surface_samples(sd, recipe: SurfaceRecipe | None = None, sphere=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One hemisphere's :class:`~neurokit.io.surface.SurfaceData` → stored samples.

    Returns
    -------
    samples : ndarray, shape (n_tubelets, T, n_patches, V), float32
    onsets : ndarray, shape (n_tubelets,), float64
        Tubelet start in seconds (frame index × TR; frame index when the TR is unknown).
    mask : ndarray of bool, shape (n_template_vertices,)
        Cortex on the template.
    """
    recipe = recipe or SurfaceRecipe()
    x, mask = surface_frames(sd, recipe, sphere)
    tubes, starts = tubelets(x, recipe.tubelet, recipe.step)
    return tubes, starts * float(sd.tr or 1.0), mask
