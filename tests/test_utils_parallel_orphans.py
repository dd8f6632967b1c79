"""Workers of a killed run end with it (issue 35, item 9): ``map_ordered`` with worker processes, its parent killed
with SIGKILL (a scheduler's time limit, the OOM killer), leaves no worker running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(p.name))
    return out


def _running(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_workers_end_when_their_parent_is_killed():
    code = (
        "import time\n"
        "from neurokit._utils.parallel import map_ordered\n"
        "for _ in map_ordered(time.sleep, [60.0] * 4, n_jobs=2):\n"
        "    pass\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.time() + 60
        workers: list[int] = []
        while time.time() < deadline and len(workers) < 2:  # the two workers have started their first item
            time.sleep(0.5)
            workers = [
                c
                for c in _children(proc.pid)
                if "loky" in Path(f"/proc/{c}/cmdline").read_bytes().decode(errors="ignore")
            ]
        assert len(workers) >= 2, "the workers did not start"
        time.sleep(2.0)  # each has run its first call (and started its watch)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_running(w) for w in workers):
        time.sleep(0.5)
    left = [w for w in workers if _running(w)]
    for w in left:  # do not leave them behind if the test fails
        os.kill(w, signal.SIGKILL)
    assert left == []
