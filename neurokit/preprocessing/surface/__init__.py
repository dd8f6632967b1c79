"""Cortical-surface fMRI on the icosahedral template: icospheres, patch tables, resampling, patch tensors."""

from neurokit.geometry.icosphere import Icosphere, icosphere, match_vertices
from neurokit.geometry.patches import (
    extract_patches,
    n_patches,
    parse_grid,
    patch_table,
    vertices_per_patch,
)
from neurokit.preprocessing.surface.resample import (
    Sphere,
    load_sphere,
    resample,
    resampling_matrix,
)

__all__ = [
    "Icosphere",
    "icosphere",
    "match_vertices",
    "extract_patches",
    "n_patches",
    "parse_grid",
    "patch_table",
    "vertices_per_patch",
    "Sphere",
    "load_sphere",
    "resample",
    "resampling_matrix",
]
