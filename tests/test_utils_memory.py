"""neurokit._utils.memory: the heap-top pad ``prepare`` asks glibc for, once per process, and only there."""

import os
import subprocess
import sys
import textwrap

import pytest

from neurokit._utils.memory import ALLOCATOR_ENV

#: prepares the same 3 EEGMMIDB runs (64 channels, 160 Hz → 200 Hz) three times; prints the page faults of
#: the last two passes and whether the pad was set
CHILD = textwrap.dedent(
    """
    import resource, sys, tempfile
    from pathlib import Path
    import neurokit
    from neurokit._utils import memory
    from neurokit.pipelines.prepare import prepare
    if sys.argv[2] == "off":  # glibc's defaults: what prepare did before it asked for the pad
        memory.keep_heap_top = lambda *args, **kwargs: False
    card = neurokit.load_card("physionet_mi")
    faults = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(3):
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            prepare(card, Path(tmp) / f"s{i}.h5", data_root=sys.argv[1], task="left_right_imagery", subjects=[1],
                    progress=False)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    print("set", memory.keep_heap_top())
    print("faults", *faults[1:])
    """
)


def _run(eeg_root, mode: str, env: dict) -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(eeg_root), mode],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    ).stdout
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_prepare_reuses_freed_pages_from_one_recording_to_the_next(eeg_root):
    """Without the pad glibc hands each recording's freed arrays back to the system and the next recording
    faults the same pages in again (~3,000 per recording here); with it ``prepare`` reuses them."""
    env = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENV}  # Dask's nanny sets MALLOC_TRIM_THRESHOLD_
    padded = _run(eeg_root, "on", env)
    if padded["set"] != ["True"]:
        pytest.skip("not glibc: mallopt(M_TOP_PAD) is not there")
    plain = _run(eeg_root, "off", env)
    n_plain, n_padded = (min(int(f) for f in r["faults"]) for r in (plain, padded))
    if n_plain < 1000:
        pytest.skip(f"this machine's allocator does not refault here ({n_plain} faults without the pad)")
    assert n_padded < 0.2 * n_plain, (n_padded, n_plain)


def test_a_pad_the_user_chose_is_left_alone():
    code = "from neurokit._utils import memory; print(memory.keep_heap_top())"
    env = {**os.environ, "MALLOC_TOP_PAD_": str(1 << 20)}
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout.split() == [
        "False"
    ]


TRAIN_CHILD = textwrap.dedent(
    """
    import resource, sys, torch
    from neurokit._utils import memory
    if sys.argv[1] == "on":
        assert memory.keep_heap_top()
    torch.manual_seed(0); torch.set_num_threads(1)
    from neurokit.models.cbramod import CBraMod
    model = CBraMod(n_layers=1); opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(16, 19, 4, 200)
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(8):
        loss = model(x).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_the_pad_does_not_make_later_training_fault_more():
    """Setting M_TOP_PAD alone froze glibc's mmap threshold at 128 KiB: every later tensor of a training loop in the
    same process (the quick start pretrains after it prepares) was mapped and faulted anew — 4× the faults, the
    quick start's system time 8 s → 55 s. With the threshold set where glibc's own adjustment ends, no more faults
    than without the pad."""
    env = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENV}  # Dask's nanny sets MALLOC_TRIM_THRESHOLD_

    def faults(mode):
        out = subprocess.run(
            [sys.executable, "-c", TRAIN_CHILD, mode], capture_output=True, text=True, env=env, check=True, timeout=300
        ).stdout
        return int(out.split()[-1])

    plain, padded = faults("off"), faults("on")
    assert padded <= 1.2 * plain, (padded, plain)
