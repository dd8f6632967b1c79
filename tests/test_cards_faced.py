"""The FACED card (issue 37): ``neuro prepare faced --data-root ROOT`` on a small corpus in FACED's published layout
(``Processed_data/sub<NNN>.pkl``, one pickled numpy array per subject) equals the CBraMod release's
``preprocessing_faced.py`` computed here with scipy in the release's order: the same windows per subject and
emotion, the release's subject split, values within 1e-3 of the signal's RMS. And the pickle reader admits numpy
arrays only: a crafted pickle is refused through the CLI and the API without anything in it running."""

from __future__ import annotations

import collections
import pickle

import numpy as np
import pytest
from scipy import signal
from typer.testing import CliRunner

from neurokit._utils.errors import DataFileError
from neurokit.cards.card import load_card
from neurokit.cli.main import app
from neurokit.datasets.faced import read_faced, safe_unpickle
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import close, store_windows

pytestmark = pytest.mark.slow

#: the release's label of each of the 28 clips (its list, written out again here from the script)
RELEASE_LABELS = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8]


def _clips(n_samples: int, seed: int, dtype=np.float64) -> np.ndarray:
    """A FACED-like array (28 clips, 32 channels, n) in µV: noise, a rhythm per clip and a drift."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_samples) / 250.0
    x = rng.normal(size=(28, 32, n_samples)) * 10.0
    x += 20.0 * np.sin(2 * np.pi * (6 + np.arange(28)[:, None, None] % 7) * t + rng.uniform(0, 6, (28, 32, 1)))
    x += 5.0 * seed + 30.0 * t / t[-1]
    return x.astype(dtype)


def _release(array: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """preprocessing_faced.py + faced_dataset.py on one subject: FFT resample to 6000, 28 x 3 windows, / 100."""
    eeg = signal.resample(array, 6000, axis=2).reshape(28, 32, 30, 200)
    out, labels = [], []
    for samples, label in zip(eeg, RELEASE_LABELS):
        for j in range(3):
            out.append(samples[:, 10 * j : 10 * (j + 1), :].reshape(32, 2000) / 100)
            labels.append(label)
    return np.stack(out), labels


def _prepare(root, out):
    return CliRunner().invoke(app, ["prepare", "faced", "--data-root", str(root), "-o", str(out)])


def test_faced_equals_the_release(tmp_path):
    root = tmp_path / "FACED" / "Processed_data"
    root.mkdir(parents=True)
    # FACED's clips are 7500 samples (30 s at 250 Hz); sub100 holds short clips, which the release still
    # stretches to 6000 samples
    arrays = {
        "sub000": _clips(7500, 1),
        "sub080": _clips(7500, 2, np.float32),
        "sub100": _clips(1500, 3),
    }
    for name, a in arrays.items():
        with open(root / f"{name}.pkl", "wb") as fh:
            pickle.dump(a, fh)
    r = _prepare(tmp_path / "FACED", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    assert "sub100.pkl: clips of 1500 samples" in " ".join(r.output.split())
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (32, 10, 200)
    assert list(st.info.ch_names[:3]) == ["Fp1", "Fp2", "Fz"] and len(st.info.ch_names) == 32
    subj = st.meta["subject"].astype(str)
    for name, a in arrays.items():
        want, labels = _release(a)
        got = store_windows(st, name)
        assert close(got, want) < 1e-3
        sel = np.flatnonzero(subj == name)
        order = sel[np.argsort(st.meta["onset"][sel], kind="stable")]
        assert st.labels[order].tolist() == labels  # clip by clip, three windows each, the release's labels
        assert np.allclose(st.meta["onset"][order], np.arange(84) * 10.0)
    # the split: sorted file names [:80] / [80:100] / [100:] = subjects 0-79 / 80-99 / 100-122
    card = load_card("faced")
    sp = card.splits("emotion")
    assert sp["train"][0] == "sub000" and sp["train"][-1] == "sub079" and len(sp["train"]) == 80
    assert sp["val"][0] == "sub080" and sp["val"][-1] == "sub099" and len(sp["val"]) == 20
    assert sp["test"][0] == "sub100" and sp["test"][-1] == "sub122" and len(sp["test"]) == 23
    assert "sub000" in sp["train"] and "sub080" in sp["val"] and "sub100" in sp["test"]
    body = st.info.card_body["tasks"]["emotion"]
    assert body["splits"] == {"train": "0-79", "val": "80-99", "test": "100-122"}
    assert body["paper"]["CBraMod"]["cohen_kappa"] == 0.5041 and body["finetune"]["head"] == "all_patch_reps"


class _Evil:
    """A pickle whose loading would run a shell command writing a marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch '{self.marker}'",))


class _Custom:
    def __init__(self):
        self.x = np.zeros(3)


def _crafted(tmp_path):
    marker = tmp_path / "ran.txt"
    files = {}
    for name, obj, cls in (
        ("sub001", _Evil(marker), "system"),  # os.system pickles as posix.system (or nt.system)
        ("sub002", collections.OrderedDict(a=np.zeros(3)), "collections.OrderedDict"),
        ("sub003", _Custom(), "test_cards_faced._Custom"),
        ("sub004", [np.zeros(2), _Evil(marker)], "system"),  # behind an array, inside a list
    ):
        d = tmp_path / name / "Processed_data"
        d.mkdir(parents=True)
        with open(d / f"{name}.pkl", "wb") as fh:
            pickle.dump(obj, fh)
        files[name] = (d / f"{name}.pkl", cls)
    return marker, files


def test_crafted_pickles_are_refused_and_nothing_runs(tmp_path):
    marker, files = _crafted(tmp_path)
    for name, (path, cls) in files.items():
        # API
        with pytest.raises(DataFileError, match="not a numpy array") as exc:
            safe_unpickle(path)
        assert str(path) in str(exc.value) and cls in str(exc.value)
        with pytest.raises(DataFileError):
            read_faced(path)
        # CLI: a non-zero exit and one line naming the file and the class
        r = _prepare(path.parent.parent, tmp_path / f"{name}.h5")
        assert r.exit_code != 0
        err = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
        assert len(err) == 1 and f"{name}.pkl" in err[0] and cls in err[0] and "not a numpy array" in err[0], r.output
    assert not marker.exists()  # nothing in any pickle ran


def test_pickle_of_arrays_in_plain_containers_and_other_protocols(tmp_path):
    a = np.arange(12.0).reshape(3, 4)
    for proto in range(0, pickle.HIGHEST_PROTOCOL + 1):
        p = tmp_path / f"a{proto}.pkl"
        p.write_bytes(pickle.dumps({"x": [a, (a.astype(np.float32), 3, "s")]}, protocol=proto))
        got = safe_unpickle(p)
        assert np.array_equal(got["x"][0], a) and got["x"][1][0].dtype == np.float32
    bad = tmp_path / "sub005.pkl"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(DataFileError, match="not a readable pickle"):
        safe_unpickle(bad)
    wrong = tmp_path / "sub006.pkl"
    wrong.write_bytes(pickle.dumps(np.zeros((28, 30, 100))))
    with pytest.raises(DataFileError, match=r"shape \(28, 30, 100\)"):
        read_faced(wrong)


def test_a_pickle_may_not_set_state_on_a_function_it_may_name(tmp_path):
    """Issue 44 item 11: the arrays-only unpickler let a pickle set attributes on a numpy function it may load
    (``_frombuffer``): BUILD on anything but an array or dtype is refused, and the function is left as it was."""
    from neurokit._utils.errors import DataFileError
    from neurokit.datasets.faced import safe_unpickle

    try:
        from numpy._core import numeric
    except ImportError:  # numpy 1.x
        from numpy.core import numeric  # type: ignore[no-redef]
    mod = numeric.__name__
    # GLOBAL _frombuffer; (None, {"neurokit_mark": 1}); BUILD: setattr(_frombuffer, "neurokit_mark", 1)
    evil = b"\x80\x02c" + mod.encode() + b"\n_frombuffer\nN}X\x0c\x00\x00\x00neurokit_markK\x01s\x86b."
    evil = evil.replace(b"X\x0c\x00\x00\x00neurokit_mark", b"X\x0d\x00\x00\x00neurokit_mark")
    (tmp_path / "e.pkl").write_bytes(evil)
    with pytest.raises(DataFileError, match=r"e\.pkl: the pickle sets the state of function .*_frombuffer.*refused"):
        safe_unpickle(tmp_path / "e.pkl")
    assert not hasattr(numeric._frombuffer, "neurokit_mark")
    arr = np.arange(6.0).reshape(2, 3)
    for proto in (2, 4, 5):
        (tmp_path / "a.pkl").write_bytes(pickle.dumps({"x": [arr, 1]}, protocol=proto))
        out = safe_unpickle(tmp_path / "a.pkl")
        assert np.array_equal(out["x"][0], arr) and out["x"][1] == 1


def test_one_bad_clip_costs_that_clip_not_the_subject(tmp_path):
    """Issue 44 item 8: a FACED clip with NaN lost the whole subject. The clip is left out (named with its
    channels), the other 27 clips keep the release's values, and the store's source entry counts it."""
    root = tmp_path / "FACED" / "Processed_data"
    root.mkdir(parents=True)
    a = _clips(7500, 3)
    a[4, 2, 1000:1010] = np.nan  # clip 5, the third channel
    with open(root / "sub000.pkl", "wb") as fh:
        pickle.dump(a, fh)
    r = CliRunner().invoke(
        app, ["prepare", "faced", "--data-root", str(tmp_path / "FACED"), "-o", str(tmp_path / "s.h5")],
        env={"COLUMNS": "400"},
    )  # fmt: skip
    said = " ".join(r.output.split())
    assert r.exit_code == 0, said
    from neurokit.datasets.faced import FACED_CHANNELS

    assert f"sub000.pkl: clip 5 holds NaN/inf samples in {FACED_CHANNELS[2]}; that clip is left out" in said
    st = PatchStore(tmp_path / "s.h5")
    clean = a.copy()
    clean[4] = 0.0
    want, labels = _release(clean)
    keep = [k for k in range(84) if k // 3 != 4]
    got = store_windows(st, "sub000")
    assert got.shape[0] == 81 and close(got, want[keep]) < 1e-3
    assert sorted(st.labels.tolist()) == sorted(labels[k] for k in keep)
    assert st.info.sources[0]["applied"]["clips_left_out_nonfinite"] == [f"clip 5 ({FACED_CHANNELS[2]})"]


def test_a_channel_dead_in_every_clip_is_named(tmp_path):
    """Review of issue 44: F3 NaN in all 28 clips ended in 'every EEG channel is flat', false and with no remedy."""
    from neurokit.datasets.faced import FACED_CHANNELS

    a = _clips(7500, 4)
    a[:, 2, :] = np.nan
    (tmp_path / "sub008.pkl").write_bytes(pickle.dumps(a))
    with pytest.raises(
        DataFileError, match=rf"sub008\.pkl: every clip holds NaN/inf samples \(in {FACED_CHANNELS[2]}\)"
    ):
        read_faced(tmp_path / "sub008.pkl")
