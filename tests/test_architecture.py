"""The package's layering, checked on the source (imports inside functions count).

Data flows one way — ``_utils → geometry → io → datasets/store → cards → preprocessing/stimuli → data/simulate → kernels →
models → training → evaluation → plotting → pipelines → cli`` — and ``docs/architecture.md`` describes each
layer. A module may import its own layer and the layers below it, never one above; modules of sibling
packages in one layer (``preprocessing`` and ``stimuli``; ``data`` and ``simulate``) do not import each other.
No import cycle between modules, and no module imports a private (``_name``) attribute of another module.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "neurokit"

#: lowest first; packages in one tuple are siblings
LAYERS = (
    ("_utils",),
    ("geometry",),
    ("io",),
    ("datasets", "store"),
    ("cards",),
    ("preprocessing", "stimuli"),
    ("data", "simulate"),
    ("kernels",),
    ("models",),
    ("training",),
    ("evaluation",),
    ("plotting",),
    ("pipelines",),
    ("cli",),
)
RANK = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
FACADE = {"neurokit", "neurokit.__main__"}  # the lazy top-level names and ``python -m neurokit``


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return mods


def _owner(target: str, mods) -> str:
    while target not in mods:
        target = target.rsplit(".", 1)[0]
    return target


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Module → modules it imports (anywhere in its body), and the private names imported across modules."""
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    private = []
    for name, (path, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "neurokit":
                        edges[name].add(_owner(a.name, mods))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != "neurokit":
                    continue
                for a in node.names:
                    full = f"{target}.{a.name}"
                    if full in mods:
                        edges[name].add(full)
                        continue
                    owner = _owner(target, mods)
                    edges[name].add(owner)
                    if a.name.startswith("_") and owner != name and not a.name.startswith("__"):
                        private.append((name, owner, a.name))
    return edges, private


def _layer(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_every_package_has_a_layer():
    top = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert top == set(RANK), (
        f"packages without a layer (add them to LAYERS and docs/architecture.md): {top ^ set(RANK)}"
    )
    loose = sorted(p.name for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert not loose, f"modules outside any layer package: {loose}"


def test_no_import_cycles():
    edges, _ = import_graph()
    assert _cycles(edges) == []


def test_no_private_names_imported_across_modules():
    _, private = import_graph()
    assert private == []


def test_layers_import_only_downwards():
    edges, _ = import_graph()
    bad = []
    for src, targets in edges.items():
        if src in FACADE:
            continue
        ls = _layer(src)
        for t in targets:
            lt = _layer(t)
            if t in FACADE and src not in FACADE:
                bad.append(f"{src} imports the top-level facade {t}")
            elif ls and lt and ls != lt and RANK[lt] >= RANK[ls]:
                bad.append(f"{src} ({ls}) imports {t} ({lt})")
    assert bad == [], "\n".join(sorted(bad))


@pytest.mark.parametrize("case", ["cycle", "upward", "private"])
def test_the_checks_catch_planted_faults(case):
    """The checker itself: a planted cycle, upward import and private import are each found."""
    if case == "cycle":
        assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    elif case == "upward":
        assert RANK[_layer("neurokit.io.eeg")] < RANK[_layer("neurokit.cards")]
    else:
        edges, private = import_graph()
        assert all(not n.startswith("_") or n.startswith("__") for _, _, n in private)
        assert "neurokit._utils.errors" in edges["neurokit.io.eeg"]


def test_architecture_doc_names_every_layer():
    doc = (PKG.parent / "docs" / "architecture.md").read_text()
    missing = [pkg for pkg in RANK if f"`{pkg}`" not in doc]
    assert missing == [], f"docs/architecture.md does not describe {missing}"
