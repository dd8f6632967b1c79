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
        One hemisphere's data (:func:`~neurokit.io.surface.read_surface`): ``data`` ``(n_vertices, n_frames)``
        on a registered mesh.
    sphere : path, Sphere, SurfaceData, nilearn mesh or None
        The registered sphere of ``sd``'s mesh and hemisphere (anything
        :func:`~neurokit.preprocessing.surface.resample.load_sphere` takes); default: a packaged one
        (:func:`~neurokit.preprocessing.surface.resample.default_sphere`: fsaverage5 via nilearn, ico-k generated).
    order : int
        Order of the template sphere (6: ico6, 40,962 vertices).
    mirror_right : bool
        Mirror a right hemisphere's sphere (x → −x) so it lands on the left template.
    threshold : float
        A template vertex is cortex when more than this fraction of its interpolation weight falls on
        ``sd.mask`` (see :func:`~neurokit.preprocessing.surface.resample.resample`).

    Returns
    -------
    data : ndarray, shape (10·4^order+2, n_frames), float32
        The data on the template; 0 outside ``mask``.
    mask : ndarray of bool, shape (10·4^order+2,)
        Cortex on the template.

    Raises
    ------
    DataFileError
        Sphere and data disagree in vertex count or hemisphere (the sphere's metadata, else its name);
        no packaged sphere for the mesh.

    Examples
    --------
    >>> from pathlib import Path
    >>> from neurokit.io.surface import SurfaceData
    >>> sd = SurfaceData(data=np.ones((40962, 2), np.float32), hemi="L", mesh="ico6", mask=np.ones(40962, bool))
    >>> data, mask = to_template(sd)  # already on the template: taken as it is
    >>> data.shape, bool(mask.all())
    ((40962, 2), True)
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

    Works in float32 on one copy of the masked values (mean and variance accumulated in float64, per
    frame); callers bound the memory by passing blocks of frames.

    Parameters
    ----------
    data : ndarray, shape (n_vertices, n_frames)
        Surface data, one column per frame.
    mask : ndarray of bool, shape (n_vertices,)
        Cortex vertices.
    source : str
        The data's name (its file), for error messages.
    first_frame : int
        Index of ``data``'s first frame in its run (errors name run frames when ``data`` is a block).

    Returns
    -------
    ndarray, shape (n_vertices, n_frames), float32
        A new array (``data`` is not changed): zero mean and unit variance per frame over ``mask``.

    Raises
    ------
    DataFileError
        An empty mask, NaN/inf values, or frames that are constant over the mask (zero variance).

    Examples
    --------
    >>> z = zscore_frames(np.arange(12.0).reshape(4, 3), np.array([True, True, True, False]))
    >>> [round(float(v), 3) for v in z[:, 0]]
    [-1.225, 0.0, 1.225, 0.0]
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
    """Cut template data into a per-frame patch tensor.

    Parameters
    ----------
    data : ndarray, shape (n_template_vertices, n_frames)
        Data on the ico-``template_order`` template (hierarchical numbering), e.g. ``(40962, n_frames)``.
    grid_order : int
        Order ``k`` of the patch grid (1…5 for the ico6 template).
    template_order : int
        Order of the template sphere (6).

    Returns
    -------
    ndarray, shape (n_frames, n_patches, V), float32
        Frame-major patches, ``V`` vertices per patch (:func:`~neurokit.geometry.patches.patch_table`).

    Raises
    ------
    ConfigError
        ``data`` does not have one row per template vertex, or orders out of range.

    Examples
    --------
    >>> frame_patches(np.zeros((40962, 7)), 2).shape
    (7, 320, 153)
    """
    return np.ascontiguousarray(np.moveaxis(extract_patches(data, grid_order, template_order), -1, 0), dtype=np.float32)


def tubelets(x: np.ndarray, size: int, stride: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Group frames into tubelets.

    Parameters
    ----------
    x : ndarray, shape (n_frames, n_patches, V)
        Per-frame patches (:func:`frame_patches`).
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

    Examples
    --------
    >>> tubes, starts = tubelets(np.zeros((8, 320, 153)), 3)
    >>> tubes.shape, starts.tolist()
    ((2, 3, 320, 153), [0, 3])
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

    The data are resampled to the template (the right hemisphere mirrored onto the left one when the recipe
    says so), z-scored per frame over the cortex (if the recipe says so) and cut into the recipe's patches.

    Parameters
    ----------
    sd : SurfaceData
        One hemisphere's data (:func:`~neurokit.io.surface.read_surface`), on any registered mesh.
    recipe : SurfaceRecipe, optional
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.SurfaceRecipe`); default
        ``SurfaceRecipe()`` (ico6/ico2 patches, tubelets of 3 frames, z-scored).
    sphere : optional
        The registered sphere of ``sd``'s mesh, anything :func:`~neurokit.preprocessing.surface.resample.load_sphere`
        takes; default the packaged one for the mesh (none needed on the ico template).

    Returns
    -------
    frames : ndarray, shape (n_frames, n_patches, V), float32
        Resampled, z-scored (if the recipe says so) and cut into the recipe's patches.
    mask : ndarray of bool, shape (n_template_vertices,)
        Cortex on the template.

    Raises
    ------
    DataFileError
        A sphere whose vertex count differs from the data's, or a frame constant over the cortex (cannot be
        z-scored).

    Examples
    --------
    >>> from pathlib import Path
    >>> from neurokit.io.surface import SurfaceData
    >>> x = np.random.default_rng(0).normal(size=(40962, 7)).astype(np.float32)  # 7 frames on ico6
    >>> sd = SurfaceData(data=x, hemi="L", mesh="ico6", mask=np.ones(40962, bool), tr=1.0, path=Path("bold.func.gii"))
    >>> frames, mask = surface_frames(sd)
    >>> frames.shape, int(mask.sum())
    ((7, 320, 153), 40962)
    """
    recipe = recipe or SurfaceRecipe()
    data, mask = to_template(
        sd, sphere, order=recipe.template_order, mirror_right=recipe.mirror_right, threshold=recipe.mask_threshold
    )
    if recipe.zscore:
        data = zscore_frames(data, mask, source=str(sd.path))
    return frame_patches(data, recipe.grid_order, recipe.template_order), mask


def surface_samples(sd, recipe: SurfaceRecipe | None = None, sphere=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One hemisphere's :class:`~neurokit.io.surface.SurfaceData` → the samples a surface store holds.

    :func:`surface_frames`, then frames grouped into tubelets of ``recipe.tubelet`` frames.

    Parameters
    ----------
    sd : SurfaceData
        One hemisphere's data (:func:`~neurokit.io.surface.read_surface`), on any registered mesh.
    recipe : SurfaceRecipe, optional
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.SurfaceRecipe`); default
        ``SurfaceRecipe()`` (ico6/ico2 patches, tubelets of 3 frames, z-scored).
    sphere : optional
        The registered sphere of ``sd``'s mesh, anything :func:`~neurokit.preprocessing.surface.resample.load_sphere`
        takes; default the packaged one for the mesh (none needed on the ico template).

    Returns
    -------
    samples : ndarray, shape (n_tubelets, T, n_patches, V), float32
        Tubelets of ``T`` frames; trailing frames that do not fill a tubelet are dropped.
    onsets : ndarray, shape (n_tubelets,), float64
        Tubelet start in seconds (frame index × TR; frame index when the TR is unknown).
    mask : ndarray of bool, shape (n_template_vertices,)
        Cortex on the template.

    Raises
    ------
    DataFileError
        As :func:`surface_frames`.

    Examples
    --------
    >>> from pathlib import Path
    >>> from neurokit.io.surface import SurfaceData
    >>> x = np.random.default_rng(0).normal(size=(40962, 7)).astype(np.float32)  # 7 frames on ico6
    >>> sd = SurfaceData(data=x, hemi="L", mesh="ico6", mask=np.ones(40962, bool), tr=1.0, path=Path("bold.func.gii"))
    >>> samples, onsets, mask = surface_samples(sd)
    >>> samples.shape, onsets.tolist()
    ((2, 3, 320, 153), [0.0, 3.0])
    """
    recipe = recipe or SurfaceRecipe()
    x, mask = surface_frames(sd, recipe, sphere)
    tubes, starts = tubelets(x, recipe.tubelet, recipe.step)
    return tubes, starts * float(sd.tr or 1.0), mask
