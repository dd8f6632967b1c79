"""The package's metadata (issue 36 item 7): a licence file, the classifiers PyPI shows, and lower bounds that
the minimum-versions job (.ci/min-versions) installs — this file keeps that job's pins and pyproject.toml in step."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
#: Dependencies the minimum-versions job does not pin (the machine's torch 2.14.1 and its triton)
UNPINNED = {"torch", "triton"}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins() -> dict[str, Version]:
    out = {}
    for line in (ROOT / ".ci/minimum-versions.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            out[name.lower()] = Version(version)
    return out


def test_minimum_versions_job_pins_every_lower_bound():
    pins = _pins()
    for dep in _pyproject()["project"]["dependencies"]:
        req = Requirement(dep)
        name = req.name.lower()
        if name in UNPINNED:
            continue
        lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
        assert lower, f"{dep}: no lower bound"
        assert name in pins, f"{name} has no pin in .ci/minimum-versions.txt"
        # the bound itself, or a patch release of it that the other minimums admit — never another minor release
        assert pins[name] in req.specifier and pins[name].release[:2] == lower[0].release[:2], (name, pins[name])
    assert set(pins) <= {Requirement(d).name.lower() for d in _pyproject()["project"]["dependencies"]}


def test_licence_and_metadata():
    meta = _pyproject()["project"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License") and "neurokit developers" in text
    assert meta["license"] == {"text": "BSD-3-Clause"}
    assert "License :: OSI Approved :: BSD License" in meta["classifiers"]
    assert {f"Programming Language :: Python :: 3.{v}" for v in (10, 11, 12)} <= set(meta["classifiers"])
    assert re.fullmatch(r">=3\.\d+", meta["requires-python"])


def test_ci_runs_the_minimum_versions_job():
    assert "bash .ci/min-versions" in (ROOT / ".ci/run").read_text()
