"""The TUAB and TUEV cards (issue 34): ``neuro prepare tuab|tuev --data-root ROOT`` on small corpora in TUH's
published layouts equals the CBraMod release's scripts (``preprocessing_tuab.py``, ``preprocessing_tuev.py``),
computed here with MNE calls in the release's order: the same windows per recording and label, the release's split
rule, values within 1e-3 of the signal's RMS."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import TUH_REF, close, store_windows, tuh_release, write_edf

pytestmark = pytest.mark.slow


def _prepare(card: str, root, out, *extra):
    r = CliRunner().invoke(app, ["prepare", card, "--data-root", str(root), "-o", str(out), *extra])
    assert r.exit_code == 0, r.output
    return r.output


def test_tuab_equals_the_release(tmp_path):
    root = tmp_path / "tuh_eeg_abnormal" / "v3.0.1" / "edf"
    files = {}  # path → (label, part)
    seed = 0
    # 5 abnormal and 4 normal training patients (one with two sessions), one of each in eval
    for part, cls, patients in (
        ("train", "abnormal", ["aaaaaaba", "aaaaaaac", "aaaaaaae", "aaaaaaaf", "aaaaaaad"]),
        ("train", "normal", ["aaaaaabb", "aaaaaabc", "aaaaaabe", "aaaaaabd"]),
        ("eval", "abnormal", ["aaaaaacz"]),
        ("eval", "normal", ["aaaaaacy"]),
    ):
        for p in patients:
            sessions = ["s001", "s002"] if p == "aaaaaaac" else ["s001"]
            for s in sessions:
                seed += 1
                sf = 256.0 if seed % 3 == 0 else 250.0
                f = write_edf(root / part / cls / "01_tcp_ar" / f"{p}_{s}_t000.edf", TUH_REF, sf, 21.0 + seed % 3, seed)
                files[f] = (cls, part)
    out = _prepare("tuab", tmp_path / "tuh_eeg_abnormal", tmp_path / "tuab.h5")
    st = PatchStore(tmp_path / "tuab.h5")
    assert list(st.info.ch_names[:2]) == ["Fp1-F7", "F7-T7"] and st.sample_shape == (16, 10, 200)
    for f, (cls, _) in files.items():
        want, _ = tuh_release(f)
        k = want.shape[1] // 2000
        want = want[:, : k * 2000].reshape(16, k, 2000).transpose(1, 0, 2) / 100.0
        got = store_windows(st, f.stem)
        assert close(got, want) < 1e-3
        labels = st.labels[st.meta["run"].astype(str) == f.stem]
        assert set(labels.tolist()) == {1 if cls == "abnormal" else 0}
    # the split: each class folder's sorted patients, int(0.8 n) train
    card = st.info.card_body["tasks"]["abnormal"]
    assert card["split_unit"] == "subject"
    # abnormal: ac ad ae af | ba (int(5 * 0.8) = 4); normal: bb bc bd | be (int(4 * 0.8) = 3)
    assert card["splits"]["train"] == [
        "aaaaaaac",
        "aaaaaaad",
        "aaaaaaae",
        "aaaaaaaf",
        "aaaaaabb",
        "aaaaaabc",
        "aaaaaabd",
    ]
    assert card["splits"]["val"] == ["aaaaaaba", "aaaaaabe"]
    assert card["splits"]["test"] == ["aaaaaacy", "aaaaaacz"]
    n = {k: int(np.isin(st.meta["subject"].astype(str), v).sum()) for k, v in card["splits"].items()}
    assert f"train {n['train']:,} · val {n['val']:,} · test {n['test']:,}" in out
    assert "v3.0.1: train 297,103 · val 75,407 · test 36,945" in out
    # fine-tuning on the card's store: the release's settings (tiny here), the paper's metrics and figures beside
    r = CliRunner().invoke(
        app,
        ["finetune", str(tmp_path / "tuab.h5"), "-o", str(tmp_path / "ft"), "--epochs", "1", "--batch-size", "8",
         "--n-layers", "1", "--no-baselines", "--no-progress"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "settings from the store's card" in r.output and "dropout 0.1" in r.output and "clip_grad 1.0" in r.output
    assert "epochs 50" not in r.output  # the options given override the card's
    assert "paper: CBraMod" in r.output and "0.8289" in r.output and "0.9227" in r.output
    import json

    rep = json.loads((tmp_path / "ft" / "report.json").read_text())
    assert rep["kind"] == "binary" and rep["paper"]["CBraMod"]["auroc"] == 0.9227
    assert set(rep["paper_metrics"]) <= set(rep["test"])


def _rec(path, rows):
    path.write_text("".join(f"{c},{a:.4f},{b:.4f},{y}\n" for c, a, b, y in rows))


def test_tuev_equals_the_release(tmp_path):
    root = tmp_path / "tuev" / "edf"
    events = {}
    seed = 10
    for part, patients in (
        ("train", ["aaaaaaaa", "aaaaaaab", "aaaaaaac", "aaaaaaad", "aaaaaaae"]),
        ("eval", ["bbbbbbbb"]),
    ):
        for p in patients:
            seed += 1
            f = write_edf(root / part / p / f"{p}_00000001.edf", TUH_REF, 250.0, 30.0, seed)
            # events on two channels at one time (the release makes a window of each), at sample and off-sample
            # times, and one 1 s from the start (the release wraps around the recording's start; neurokit drops it)
            rows = [
                (0, 5.0, 6.0, 1 + seed % 6),
                (3, 5.0, 6.0, 1 + seed % 6),
                (1, 12.004, 13.004, 6),
                (2, 20.5, 21.5, 4),
            ]
            rows.append((5, 1.0, 2.0, 5))
            _rec(f.with_suffix(".rec"), rows)
            events[f] = rows
    _prepare("tuev", tmp_path / "tuev", tmp_path / "tuev.h5")
    st = PatchStore(tmp_path / "tuev.h5")
    assert st.sample_shape == (16, 5, 200)
    for f, rows in events.items():
        sig, times = tuh_release(f)
        want, labels = [], []
        for _, a, b, y in rows:
            start = int(np.where(times >= a)[0][0])
            end = int(np.where(times >= b)[0][0])
            if start - 400 < 0:  # the release would wrap around to the recording's end
                continue
            want.append(sig[:, start - 400 : end + 400] / 100.0)
            labels.append(y - 1)
        got = store_windows(st, f.stem)
        assert close(got, np.stack(want)) < 1e-3
        sel = st.meta["run"].astype(str) == f.stem
        order = np.argsort(st.meta["onset"][sel], kind="stable")
        assert sorted(st.labels[sel][order].tolist()) == sorted(labels)
    card = st.info.card_body["tasks"]["events"]
    assert card["splits"]["train"] == ["aaaaaaaa", "aaaaaaab", "aaaaaaac", "aaaaaaad"]
    assert card["splits"]["val"] == ["aaaaaaae"] and card["splits"]["test"] == ["bbbbbbbb"]


def test_tuev_label_file_that_does_not_match_its_recording(tmp_path):
    f = write_edf(tmp_path / "tuev" / "train" / "aaaaaaaa" / "aaaaaaaa_00000001.edf", TUH_REF, 250.0, 12.0, 1)
    _rec(f.with_suffix(".rec"), [(0, 40.0, 41.0, 1)])
    r = CliRunner().invoke(
        app, ["prepare", "tuev", "--data-root", str(tmp_path / "tuev"), "-o", str(tmp_path / "x.h5")]
    )
    assert r.exit_code != 0
    assert "aaaaaaaa_00000001.rec: 1 event(s) start at or after the end of aaaaaaaa_00000001.edf" in r.output


def test_tuab_file_without_a_montage_electrode_is_left_out_and_named(tmp_path):
    """The release skips a file lacking a montage electrode silently; the card skips it and says which and why."""
    root = tmp_path / "edf"
    write_edf(root / "train" / "normal" / "01_tcp_ar" / "aaaaaaaa_s001_t000.edf", TUH_REF, 250.0, 12.0, 1)
    names = [c for c in TUH_REF if c != "EEG T3-REF"]
    write_edf(root / "train" / "abnormal" / "01_tcp_ar" / "aaaaaaab_s001_t000.edf", names, 250.0, 12.0, 2)
    r = CliRunner().invoke(app, ["prepare", "tuab", "--data-root", str(root), "-o", str(tmp_path / "x.h5")])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "no channel T7 (T3 in old 10-20 names) of the recipe's channels; left out (missing_channels: skip)" in flat
    assert "1 recording(s) left out by the recipe's rules" in flat
    st = PatchStore(tmp_path / "x.h5")
    assert set(st.meta["subject"].astype(str)) == {"aaaaaaaa"}
    assert [p.rsplit("/", 1)[-1] for p in st.info.dropped] == ["aaaaaaab_s001_t000.edf"]


def test_tuev_split_counts_only_patients_with_windows_and_tuh_ids_and_files_select(tmp_path):
    """Review findings: TUEV's release lists its processed files, so a patient whose only file was skipped is not in
    the 80 % cut (kept_only); --subjects takes TUH patient ids; -f finds a file's labels where the dataset lays it
    out, and a loose file is refused naming the way in."""
    root = tmp_path / "tuev"
    lacking = [c for c in TUH_REF if c != "EEG O2-REF"]
    for i, p in enumerate(["bbbbbbba", "bbbbbbbb", "bbbbbbbc", "bbbbbbbd", "bbbbbbbe", "bbbbbbbf"]):
        f = write_edf(root / "train" / p / f"{p}_00000001.edf", lacking if p == "bbbbbbba" else TUH_REF, 250.0, 12.0, i)
        _rec(f.with_suffix(".rec"), [(0, 5.0, 6.0, 6)])
    f = write_edf(root / "eval" / "cccccccc" / "cccccccc_00000001.edf", TUH_REF, 250.0, 12.0, 9)
    _rec(f.with_suffix(".rec"), [(0, 5.0, 6.0, 6)])
    _prepare("tuev", root, tmp_path / "a.h5")
    sp = PatchStore(tmp_path / "a.h5").info.card_body["tasks"]["events"]["splits"]
    # the release's cut over b…f (5 patients with windows): int(5 * 0.8) = 4 train
    assert sp["train"] == ["bbbbbbbb", "bbbbbbbc", "bbbbbbbd", "bbbbbbbe"] and sp["val"] == ["bbbbbbbf"]
    _prepare("tuev", root, tmp_path / "b.h5", "--subjects", "bbbbbbbc,cccccccc")
    assert set(PatchStore(tmp_path / "b.h5").meta["subject"].astype(str)) == {"bbbbbbbc", "cccccccc"}
    r = CliRunner().invoke(app, ["prepare", "tuev", "-o", str(tmp_path / "c.h5"), "-f", str(f)])
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "c.h5")
    assert st.labels.tolist() == [5] and list(st.meta["subject"].astype(str)) == ["cccccccc"]
    loose = write_edf(tmp_path / "loose.edf", TUH_REF, 250.0, 12.0, 3)
    r = CliRunner().invoke(app, ["prepare", "tuev", "-o", str(tmp_path / "d.h5"), "-f", str(loose)])
    assert r.exit_code != 0 and "does not find this file where the dataset lays it out" in " ".join(r.output.split())


@pytest.mark.parametrize("above", ["abnormal", "eval"])
def test_folders_above_the_data_root_carry_no_label_or_split(tmp_path, above):
    """Issue 44 item 2: a TUAB tree kept under a parent folder named ``abnormal`` (or ``eval``) got every recording
    labelled abnormal (or put in the test split): only the path below --data-root may carry meaning."""
    root = tmp_path / above / "tuab"
    seed = 0
    for part, cls, patients in (
        ("train", "abnormal", ["aaaaaaba", "aaaaaaac"]),
        ("train", "normal", ["aaaaaabb", "aaaaaabc"]),
        ("eval", "abnormal", ["aaaaaacz"]),
        ("eval", "normal", ["aaaaaacy"]),
    ):
        for p in patients:
            seed += 1
            write_edf(root / "edf" / part / cls / "01_tcp_ar" / f"{p}_s001_t000.edf", TUH_REF, 250.0, 21.0, seed)
    _prepare("tuab", root, tmp_path / "tuab.h5")
    st = PatchStore(tmp_path / "tuab.h5")
    subj = st.meta["subject"].astype(str)
    got = {s: sorted(set(st.labels[subj == s].tolist())) for s in sorted(set(subj))}
    assert got == {"aaaaaaac": [1], "aaaaaaba": [1], "aaaaaabb": [0], "aaaaaabc": [0], "aaaaaacy": [0], "aaaaaacz": [1]}
    sp = st.info.card_body["tasks"]["abnormal"]["splits"]
    assert sp["test"] == ["aaaaaacy", "aaaaaacz"] and "aaaaaaac" in sp["train"] and "aaaaaabb" in sp["train"]


def test_first_mistakes_an_empty_folder_and_a_rate_tuab_never_has(tmp_path):
    """Issue 44 item 10: ``neuro prepare tuab`` on an empty folder said "pass --data-root" although it was passed,
    naming neither the layout nor ``neuro cards show tuab``; 500-Hz files laid out as TUAB were taken silently."""
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(
        app, ["prepare", "tuab", "--data-root", str(tmp_path / "empty"), "-o", str(tmp_path / "x.h5")],
        env={"COLUMNS": "400"},
    )  # fmt: skip
    said = " ".join(r.output.split())
    assert r.exit_code != 0 and "no recording for reader 'tuab' under" in said
    assert "laid out as edf/{train,eval}/{abnormal,normal}/01_tcp_ar/" in said and "neuro cards show tuab" in said
    root = tmp_path / "tuab"
    for seed, (part, cls, p) in enumerate((("train", "abnormal", "aaaaaaba"), ("train", "normal", "aaaaaabb"),
                                           ("eval", "abnormal", "aaaaaacz"), ("eval", "normal", "aaaaaacy"))):  # fmt: skip
        write_edf(root / "edf" / part / cls / "01_tcp_ar" / f"{p}_s001_t000.edf", TUH_REF, 500.0, 21.0, seed + 1)
    r = CliRunner().invoke(
        app, ["prepare", "tuab", "--data-root", str(root), "-o", str(tmp_path / "t.h5")], env={"COLUMNS": "400"}
    )
    said = " ".join(r.output.split())
    assert r.exit_code == 0, said
    assert "500 Hz, a rate TUH's recordings never have (250, 256, 400, 512 Hz): is this file from TUAB?" in said


def test_the_reading_options_reach_the_edf_dataset_readers(tmp_path):
    """Review of issue 44: ``--units V --override-units`` (the remedy the units check names) was ignored on reader
    cards: TUAB's reader read every EDF with read_eeg's defaults. The reading options now reach it."""
    from neurokit.datasets.registry import DATASETS, get_reader
    from neurokit.io.entry import FileEntry

    f = write_edf(tmp_path / "tuab" / "edf" / "train" / "normal" / "01_tcp_ar" / "aaaaaaba_s001_t000.edf",
                  TUH_REF, 250.0, 12.0, 3)  # fmt: skip
    e = FileEntry(path=f, subject="aaaaaaba", reader="tuab")
    plain = get_reader("tuab").read_entry(e).get_data()
    as_mv = get_reader("tuab").read_entry(e, units="mV", override_units=True).get_data()
    np.testing.assert_allclose(as_mv, plain * 1e3, rtol=1e-9)  # the samples read as the unit asked
    edf_readers = {n for n, r in DATASETS.items() if r.reads_edf}
    assert edf_readers == {"eegmat", "tuab", "tuev", "chb_mit", "isruc", "mumtaz"}
