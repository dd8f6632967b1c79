"""Sphinx configuration of the neurokit documentation site.

Build (as ``.ci/run`` does, warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The gallery (``examples/``) is executed at build time on the shared recordings (``../shared/data``, or
``NEUROKIT_SHARED``); ``NEUROKIT_DOCS_NO_GALLERY=1`` skips running it (pages without figures).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version as _version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # document this checkout, not another installed copy
os.environ.setdefault("MPLBACKEND", "Agg")

project = "neurokit"
author = "neurokit developers"
copyright = "2026, neurokit developers"
release = _version("neurokit-fm")
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "images/README.md"]
templates_path = ["_templates"]

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {
    "members": True,
    "undoc-members": False,
    "show-inheritance": False,
    # scikit-learn's metadata-routing methods, inherited by the estimator: theirs to document
    "exclude-members": "set_fit_request,set_predict_request,set_predict_proba_request,"
    "set_score_request,set_transform_request,set_decision_function_request",
}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
autodoc_mock_imports = ["triton"]  # the fused kernels document without a GPU toolchain
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = f"neurokit {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
html_static_path = ["_static"]
html_css_files = ["neurokit.css"]  # gallery code and output wrapped to the column
# pages that are a section of their own, without sub-pages: no empty "Section Navigation" sidebar beside them
html_sidebars = {page: [] for page in ("index", "install", "quickstart", "architecture", "changelog")}

_shared = Path(os.environ.get("NEUROKIT_SHARED", ROOT.parent / "shared"))
os.environ.setdefault("NEUROKIT_SHARED", str(_shared))
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": "False" if os.environ.get("NEUROKIT_DOCS_NO_GALLERY") else "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "min_reported_time": 1,
}
