"""The documentation site stays true to the package: every public module is in the API reference, every
page is reachable from the index, and the gallery examples exist (the build itself runs in ``.ci/run``)."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import neurokit

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def public_modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(neurokit.__path__, "neurokit.")
        if not any(p.startswith("_") for p in m.name.split(".")[1:])
    )


def test_api_reference_lists_every_public_module():
    listed = set(re.findall(r"^   (neurokit[\w.]*)$", (DOCS / "api.rst").read_text(), flags=re.M))
    missing = sorted(set(public_modules()) - listed)
    stale = sorted(listed - set(public_modules()))
    assert not missing, f"docs/api.rst lacks {missing}"
    assert not stale, f"docs/api.rst lists modules that do not exist: {stale}"


def test_every_page_is_in_a_toctree():
    index = (DOCS / "index.rst").read_text()
    entries = set(re.findall(r"^   ([\w/]+)$", index, flags=re.M))
    for sub in [e for e in entries if e.endswith("/index") and (DOCS / f"{e}.md").exists()]:  # a section's toctree
        block = (DOCS / f"{sub}.md").read_text().split("```{toctree}")[1].split("```")[0]
        folder = sub.rsplit("/", 1)[0]
        entries |= {f"{folder}/{n}" for n in re.findall(r"^([\w/]+)$", block, flags=re.M)}
    pages = {
        str(p.relative_to(DOCS).with_suffix(""))
        for p in DOCS.rglob("*")
        if p.suffix in (".md", ".rst")
        and not {"generated", "_templates", "auto_examples", "_build", "images"} & set(p.parts)
        and p.name not in ("index.rst", "sg_execution_times.rst")
    }
    assert pages - entries == set(), f"pages no toctree reaches: {sorted(pages - entries)}"
    assert entries - pages - {"auto_examples/index"} == set()


def test_gallery_examples_have_a_title_and_run_on_shared_data():
    examples = sorted((ROOT / "examples").glob("plot_*.py"))
    assert len(examples) >= 3
    for ex in examples:
        text = ex.read_text()
        assert re.match(r'"""\n.+\n=+\n', text), f"{ex.name}: a sphinx-gallery example starts with a titled docstring"
        assert "http" not in text.split('"""', 2)[2], f"{ex.name}: examples never download"


def _paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a Markdown/reST page (blank-line separated), code blocks and tables left out."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    blocks = (" ".join(b.split()) for b in re.split(r"\n\s*\n", text))
    return [b for b in blocks if not b.startswith(("|", "#", "..", "   ", "- ", "* ", "<!--"))]


def repeated_paragraphs(text: str, head: int = 80, shortest: int = 120) -> list[str]:
    """Openings (the first ``head`` characters) shared by two prose paragraphs of at least ``shortest``
    characters: a paragraph kept twice, with the same or with different figures."""
    seen: dict[str, int] = {}
    for p in _paragraphs(text):
        if len(p) >= shortest:
            seen[p[:head]] = seen.get(p[:head], 0) + 1
    return [k for k, n in seen.items() if n > 1]


def test_repeated_paragraphs_are_found():
    para = "**Data loading.** On the CPU the model, not the store, is the bottleneck (reading is ≥ {}× faster " * 2
    page = f"# Page\n\n{para.format(35, 35)}\n\nOther text.\n\n{para.format(24, 24)}\n"
    assert repeated_paragraphs(page) == [para.format(35, 35)[:80]]
    assert repeated_paragraphs(f"{para.format(35, 35)}\n\n```\n{para.format(35, 35)}\n```\n") == []


def test_no_docs_page_repeats_a_paragraph():
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "benchmarks" / "README.md"]
    pages += [p for p in DOCS.rglob("*") if p.suffix in (".md", ".rst") and "_build" not in p.parts]
    found = {str(p.relative_to(ROOT)): r for p in pages if p.is_file() and (r := repeated_paragraphs(p.read_text()))}
    assert found == {}, f"paragraphs kept twice (keep one, with the measured figures): {found}"
