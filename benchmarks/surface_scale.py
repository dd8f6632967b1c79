"""Surface stores at HCP scale: peak memory of ``prepare`` and store size against the input file.

A synthetic CIFTI-2 dtseries with the HCP grayordinate layout (91,282: the fs_LR 32k cortex of the shared
``sub-MSC01_test.dtseries.nii`` plus 31,870 subcortical voxels) and ``--frames`` frames is written to a
temporary folder; ``write_surface_store`` runs in a fresh process (HCP card recipe: ico6/ico3, T = 3,
stride 1) and reports

* peak memory: the process's high-water RSS minus its RSS just before the call, as a multiple of the file;
* store size / file size.

``--baseline PATH`` runs the same measurement with another neurokit checkout (e.g. ``git worktree add
/tmp/nk-main main``) in the same run, for a before/after ratio.

Usage::

    python benchmarks/surface_scale.py --frames 900 [--baseline /tmp/nk-main]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NEUROKIT_SHARED", REPO.parent / "shared"))
N_SUBCORTICAL = 91_282 - 59_412


def write_synthetic_cifti(path: Path, n_frames: int, *, template: Path | None = None, seed: int = 0) -> Path:
    """An HCP-layout dtseries (91,282 grayordinates, TR 0.72 s) of smooth-in-time random data, float32.

    The cortex models are those of ``template`` (default: the shared fs_LR 32k MSC file); the data are
    written in blocks of frames so that making the file does not itself hold a second copy.
    """
    import nibabel as nib
    from nibabel import cifti2

    template = template or SHARED / "data/surface/cifti/sub-MSC01_test.dtseries.nii"
    bm = nib.load(template).header.get_axis(1)
    cortex = [b for name, _, b in bm.iter_structures() if "CORTEX" in name]
    vol = np.zeros((40, 40, 40), dtype=bool)
    vol.reshape(-1)[:N_SUBCORTICAL] = True
    axis = cortex[0] + cortex[1] + cifti2.BrainModelAxis.from_mask(vol, name="thalamus_left", affine=np.eye(4))
    series = cifti2.SeriesAxis(start=0.0, step=0.72, size=n_frames, unit="SECOND")
    rng = np.random.default_rng(seed)
    data = np.empty((n_frames, len(axis)), dtype=np.float32)
    level = rng.normal(1000.0, 100.0, len(axis)).astype(np.float32)  # a per-grayordinate baseline, BOLD-like
    for lo in range(0, n_frames, 64):
        k = min(64, n_frames - lo)
        noise = rng.standard_normal((k, len(axis)), dtype=np.float32)
        data[lo : lo + k] = level + 10.0 * np.cumsum(noise, axis=0) / np.sqrt(np.arange(1, k + 1))[:, None]
    img = cifti2.Cifti2Image(data, header=(series, axis))
    nib.save(img, str(path))
    return path


_CHILD = r"""
import json, resource, sys, warnings
from pathlib import Path
warnings.simplefilter("ignore")
from neurokit.preprocessing.surface.patching import SurfaceRecipe
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store
from neurokit.preprocessing.surface.resample import resampling_matrix, load_sphere
src, out, sl, sr = sys.argv[1:5]
for s in (sl, sr):  # build/cache the resampling matrices first: not part of the per-run cost
    m = load_sphere(s)
    resampling_matrix(m.mirrored() if s == sr else m, 6)
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
before = rss()
import time
t = time.perf_counter()
write_surface_store(out, [SurfaceRun(Path(src), "1")], SurfaceRecipe(grid="ico6/ico3", tubelet=3, stride=1),
                    spheres={"L": sl, "R": sr})
wall = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
import neurokit
print(json.dumps({"before": before, "peak": peak, "wall_s": wall, "neurokit": neurokit.__file__}))
"""


def measure(src: Path, out: Path, pythonpath: Path) -> dict:
    sph = SHARED / "data/surface/hcp_fs_LR32k"
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            _CHILD,
            str(src),
            str(out),
            str(sph / "S1200.L.sphere.32k_fs_LR.surf.gii"),
            str(sph / "S1200.R.sphere.32k_fs_LR.surf.gii"),
        ],
        env=env,
        cwd=str(pythonpath),
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode:
        raise RuntimeError(r.stderr[-3000:])
    d = json.loads(r.stdout.strip().splitlines()[-1])
    d["store_bytes"] = out.stat().st_size
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=900)
    ap.add_argument("--baseline", type=Path, help="another neurokit checkout, measured in the same run")
    ap.add_argument("--repeats", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = write_synthetic_cifti(Path(tmp) / "hcp.dtseries.nii", a.frames)
        size = src.stat().st_size
        print(f"input: {src.name}, 91,282 grayordinates x {a.frames} frames, {size / 2**20:.0f} MiB")
        runs = [("this tree", REPO)] + ([("baseline", a.baseline)] if a.baseline else [])
        for _ in range(a.repeats):
            for name, root in runs:
                out = Path(tmp) / f"{name.replace(' ', '_')}.h5"
                d = measure(src, out, root)
                out.unlink()
                print(
                    f"{name:10s}: prepare peak {(d['peak'] - d['before']) / size:4.2f}x the file "
                    f"({(d['peak'] - d['before']) / 2**20:.0f} MiB above the {d['before'] / 2**20:.0f} MiB before; "
                    f"{d['peak'] / 2**20:.0f} MiB peak RSS) | store {d['store_bytes'] / size:4.2f}x the file | "
                    f"{d['wall_s']:.1f} s"
                )


if __name__ == "__main__":
    main()
