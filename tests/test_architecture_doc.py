"""``docs/architecture.md`` stays true to the source tree: every module it names exists, and every package is named.

The document is a list of package paragraphs, each opened by its package(s) in bold (``**`models`**``). Checked on
the text, without importing neurokit:

- a module file named in backquotes (``x.py``, ``a/x.py``) exists: under one of the paragraph's packages (in any of
  their sub-packages), or, with a folder, as that path under ``neurokit/`` or the repository;
- a dotted name ``neurokit.a.b`` names a module or package, or a name defined in (or re-exported by) the longest
  module it starts with (``neurokit.read_eeg``: a name of the lazy facade);
- every package of ``neurokit/`` (a folder with ``__init__.py``) is named: a top-level one opens a paragraph in bold,
  a sub-package (``preprocessing/eeg``, ``cards/layouts``) is named as ``a/b``, ``neurokit.a.b``, or ``b/`` in its
  parent's paragraph; and every package in bold exists.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "neurokit"
DOC = ROOT / "docs" / "architecture.md"

BOLD = re.compile(r"\*\*`([A-Za-z_][\w/]*)`\*\*")
CODE = re.compile(r"`([^`\n]+)`")
MODULE_FILE = re.compile(r"^[\w./-]*\w\.py$")
DOTTED = re.compile(r"\bneurokit(?:\.[A-Za-z_]\w*)+")


def _paragraphs() -> list[tuple[list[str], str]]:
    """``(packages in bold at its start, text)`` of each paragraph (blank-line separated) of the document."""
    out = []
    for para in re.split(r"\n\s*\n", DOC.read_text()):
        head = para.lstrip()
        pkgs = BOLD.findall(head) if head.startswith("**`") else []
        out.append((pkgs, para))
    return out


def _packages() -> list[str]:
    """Every package under ``neurokit/``, as a path relative to it (``cards``, ``cards/layouts``)."""
    return sorted(p.parent.relative_to(PKG).as_posix() for p in PKG.rglob("__init__.py") if p.parent != PKG)


def _module_exists(name: str, pkgs: list[str]) -> bool:
    path = Path(name)
    if len(path.parts) > 1:  # a folder given: the path from neurokit/ or the repository, or below a named package
        bases = [PKG, ROOT] + [PKG / p for p in pkgs]
        return any((b / path).is_file() for b in bases)
    roots = [PKG / p for p in pkgs] or [PKG]
    return any(next(r.rglob(name), None) is not None for r in roots if r.is_dir())


def _dotted_exists(name: str) -> bool:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:k])
        src = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if not src.is_file():
            continue
        rest = parts[k:]
        if not rest:
            return True
        # a name the module defines, assigns, imports or lists (the lazy facade's table of names)
        return re.search(rf"(?<![\w.]){re.escape(rest[0])}\b", src.read_text()) is not None
    return False


def test_named_modules_exist():
    missing = []
    for pkgs, text in _paragraphs():
        for token in CODE.findall(text):
            token = token.strip()
            if MODULE_FILE.match(token) and not _module_exists(token, pkgs):
                where = f"the {', '.join(pkgs)} paragraph" if pkgs else "a paragraph without a package"
                missing.append(f"{token} ({where})")
    assert missing == [], f"docs/architecture.md names module files that do not exist: {missing}"


def test_dotted_names_exist():
    text = DOC.read_text()
    missing = sorted({n for n in DOTTED.findall(text) if not _dotted_exists(n)})
    assert missing == [], f"docs/architecture.md names neurokit.* modules or names that do not exist: {missing}"


def test_every_package_is_named():
    paragraphs = _paragraphs()
    text = DOC.read_text()
    bold = {p for pkgs, _ in paragraphs for p in pkgs}
    unnamed = []
    for pkg in _packages():
        if "/" not in pkg:
            if pkg not in bold:
                unnamed.append(pkg)
            continue
        parent, sub = pkg.rsplit("/", 1)
        top = pkg.split("/", 1)[0]
        own = "\n".join(t for pkgs, t in paragraphs if top in pkgs)
        named = (
            f"`{pkg}`" in text
            or f"`{pkg}/" in text
            or f"neurokit.{pkg.replace('/', '.')}" in text
            or re.search(rf"`{re.escape(sub)}/[^`]*`", own) is not None
            or f"`{parent.rsplit('/', 1)[-1]}/{sub}" in own
        )
        if not named:
            unnamed.append(pkg)
    assert unnamed == [], f"docs/architecture.md leaves packages of neurokit/ unnamed: {unnamed}"
    unknown = sorted(p for p in bold if not (PKG / p / "__init__.py").is_file())
    assert unknown == [], f"docs/architecture.md opens paragraphs with packages that do not exist: {unknown}"
