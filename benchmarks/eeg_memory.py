"""Peak memory of ``prepare`` on one long EEG recording, against its length.

Real EEGMMIDB runs (64 channels, 160 Hz) are concatenated into a 10-minute and a 2-hour EDF in a temporary
folder; each is prepared in a fresh process (physionet_mi recipe: 0.3-75 Hz, 60 Hz notch, 200 Hz,
4-s windows) and the process's peak RSS above its RSS before the call is printed beside the size of the
recording as float64 samples in memory (MNE's preloaded form). Imports happen before the first reading.
The peak is the child's ``VmHWM`` (``ru_maxrss`` would include the parent's memory at fork: Linux keeps it
across ``exec``, which inflated the first figures of the results table). ``--stream-above`` sets
``prepare``'s streaming threshold (MiB; a large value measures the in-memory path).

Usage::

    python benchmarks/eeg_memory.py [--data-root ../shared/data/eeg] [--minutes 10 120]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from neurokit.pipelines.prepare import prepare
import mne, scipy.signal, h5py, neurokit.io.eeg, neurokit.preprocessing.eeg  # imports are not the recording's cost
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
before = rss()
t = time.perf_counter()
prepare("physionet_mi", sys.argv[2], files=[sys.argv[1]], progress=False,
        stream_above_mb=float(sys.argv[3]) if sys.argv[3] != "none" else None)
# VmHWM: this image's peak RSS (ru_maxrss would also count the parent's RSS at fork, kept across exec)
hwm = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"before": before, "peak": hwm, "wall_s": time.perf_counter() - t}))
"""


def long_recording(data_root: Path, minutes: float, out: Path) -> tuple[Path, int]:
    """Concatenate EEGMMIDB runs (S001…, R01…R14) until ``minutes`` are reached; write an EDF."""
    import mne

    files = sorted((data_root / "MNE-eegbci-data/files/eegmmidb/1.0.0").glob("S*/S*R*.edf"))
    raws, total = [], 0.0
    for f in files:
        r = mne.io.read_raw_edf(f, preload=True, verbose="error")
        r.set_annotations(None)
        raws.append(r)
        total += r.times[-1]
        if total >= minutes * 60:
            break
    raw = mne.concatenate_raws(raws, verbose="error")
    raw.crop(0, min(minutes * 60, raw.times[-1]))
    mne.export.export_raw(out, raw, fmt="edf", overwrite=True, verbose="error")
    return out, raw.n_times * len(raw.ch_names) * 8


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", type=Path, default=REPO.parent / "shared/data/eeg")
    ap.add_argument("--minutes", type=float, nargs="+", default=[10, 120])
    ap.add_argument("--stream-above", type=float, default=None, help="MiB; default prepare's own (256)")
    a = ap.parse_args()
    if not a.data_root.is_dir():
        ap.error(f"--data-root {a.data_root}: no such folder; give the folder holding MNE-eegbci-data/")
    with tempfile.TemporaryDirectory() as tmp:
        for m in a.minutes:
            edf, in_mem = long_recording(a.data_root, m, Path(tmp) / f"long{m:g}.edf")
            r = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    _CHILD,
                    str(edf),
                    str(Path(tmp) / f"s{m:g}.h5"),
                    "none" if a.stream_above is None else str(a.stream_above),
                ],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                capture_output=True,
                text=True,
            )
            if r.returncode:
                raise RuntimeError(r.stderr[-3000:])
            d = json.loads(r.stdout.strip().splitlines()[-1])
            above = d["peak"] - d["before"]
            print(
                f"{m:6g} min recording: prepare peak {above / 2**20:7.0f} MiB above the start "
                f"({d['peak'] / 2**20:.0f} MiB peak RSS) = {above / in_mem:.2f}x its float64 samples "
                f"({in_mem / 2**20:.0f} MiB); EDF {edf.stat().st_size / 2**20:.0f} MiB; {d['wall_s']:.1f} s"
            )


if __name__ == "__main__":
    main()
