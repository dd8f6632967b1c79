"""BIDS input: EEGMMIDB runs converted with mne-bids give the same store as the EDFs; channels.tsv bads
are interpolated; participants.tsv columns become subject-level labels; `neuro prepare --bids`."""

import csv
import copy

import mne
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.preprocessing.eeg.prepare import PREPARE_FFT_DTYPE
from neurokit._utils.errors import CardError
from neurokit.cards import DataCard, load_card
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare

mne_bids = pytest.importorskip("mne_bids")

EDF = "MNE-eegbci-data/files/eegmmidb/1.0.0/S{s:03d}/S{s:03d}R{r:02d}.edf"


def _to_bids(eeg_root, root, subjects, runs, groups=None):
    for s in subjects:
        for r in runs:
            raw = mne.io.read_raw_edf(eeg_root / EDF.format(s=s, r=r), verbose="error")
            raw.info["line_freq"] = 60
            bp = mne_bids.BIDSPath(subject=f"{s:03d}", task="imagery", run=r, datatype="eeg", root=root)
            mne_bids.write_raw_bids(raw, bp, overwrite=True, verbose="error")
    if groups:  # a participants.tsv column of our own: subject-level labels
        p = root / "participants.tsv"
        rows = list(csv.DictReader(p.open(encoding="utf-8-sig"), delimiter="\t"))
        with p.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=[*rows[0], "group"], delimiter="\t")
            w.writeheader()
            for row in rows:
                w.writerow({**row, "group": groups[row["participant_id"]]})
    return root


@pytest.fixture(scope="module")
def bids_root(eeg_root, tmp_path_factory):
    """S001-S002, imagery runs 4/8/12, written by mne-bids' write_raw_bids (EDF copied, events.tsv from
    the EDF+ annotations)."""
    return _to_bids(
        eeg_root,
        tmp_path_factory.mktemp("bids") / "eegmmidb",
        [1, 2],
        [4, 8, 12],
        groups={"sub-001": "A", "sub-002": "B"},
    )


def _bids_card(subdir=""):
    raw = copy.deepcopy(load_card("physionet_mi").raw)
    raw["layout"] = {
        "kind": "bids",
        "task": "imagery",
        "subdir": subdir,
        "subject_format": "S{:03d}",
        "run_format": "R{:02d}",
    }
    return DataCard(name="physionet_mi", raw=raw)


def test_bids_store_equals_edf_store(bids_root, lr_store, tmp_path):
    out = prepare(
        _bids_card(),
        tmp_path / "bids.h5",
        data_root=bids_root,
        task="left_right_imagery",
        subjects=[1, 2],
        channels="sensorimotor",
        progress=False,
    )
    a, b = PatchStore(lr_store), PatchStore(out)
    assert len(b) == len(a) == 90
    np.testing.assert_array_equal(b.patches(slice(None)), a.patches(slice(None)))
    np.testing.assert_array_equal(b.labels, a.labels)
    for col in ("subject", "session", "run", "onset"):
        np.testing.assert_array_equal(b.meta[col], a.meta[col], err_msg=col)
    for k in ("ch_names", "recipe", "label_names", "task", "sfreq", "units"):
        assert b.attrs[k] == a.attrs[k], k
    assert [s["sha256"] for s in b.attrs["sources"]] == [s["sha256"] for s in a.attrs["sources"]]  # EDFs copied as is
    # participants.tsv columns, keyed by store subject id
    assert b.attrs["participants"]["S001"]["group"] == "A" and b.attrs["participants"]["S002"]["group"] == "B"
    assert set(b.attrs["participants"]["S001"]) == {"age", "sex", "hand", "weight", "height", "group"}


def test_bids_bad_channel_is_interpolated(eeg_root, lr_store, tmp_path):
    from neurokit.io.eeg import read_eeg
    from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw

    root = _to_bids(eeg_root, tmp_path / "one", [1], [4])
    bp = mne_bids.BIDSPath(subject="001", task="imagery", run=4, datatype="eeg", root=root)
    mne_bids.mark_channels(bp, ch_names=["C3.."], status="bad", descriptions=["test"], verbose="error")
    card = _bids_card()
    out = prepare(
        card,
        tmp_path / "bad.h5",
        data_root=root,
        task="left_right_imagery",
        subjects=[1],
        channels="sensorimotor",
        progress=False,
    )
    st = PatchStore(out)
    assert st.attrs["sources"][0]["applied"]["interpolated_channels"] == ["C3"]
    # the same as marking C3 bad on the EDF: MNE's spherical-spline interpolation, then the recipe
    raw = read_eeg(eeg_root / EDF.format(s=1, r=4), preload=True)
    raw.info["bads"] = ["C3"]
    raw.interpolate_bads(reset_bads=True, verbose="error")
    recipe = card.recipe().from_dict(
        {**card.recipe().to_dict(), "channels": card.channel_set("sensorimotor"), "events": {"T1": 0, "T2": 1}}
    )
    raw = preprocess_raw(raw, recipe, fft_dtype=PREPARE_FFT_DTYPE)  # prepare's precision
    w = make_windows(raw, recipe)
    np.testing.assert_array_equal(st.patches(slice(None)), w.patches)
    # …and not the recorded C3: the bad channel really was replaced
    edf = PatchStore(lr_store)
    first = np.flatnonzero((edf.meta["subject"] == "S001") & (edf.meta["run"] == "R04"))
    c3 = edf.attrs["ch_names"].index("C3")
    rec, interp = edf.patches(first)[:, c3], st.patches(slice(None))[:, c3]
    assert np.abs(rec - interp).max() > 0.05
    assert np.corrcoef(rec.ravel(), interp.ravel())[0, 1] > 0.3  # a smooth estimate of the same region


def test_cli_prepare_bids(bids_root, tmp_path):
    from neurokit.cli.main import app

    def run(*args):
        r = CliRunner().invoke(*args)
        r.text = " ".join(r.output.split())  # rich wraps long lines
        return r

    r = run(
        app,
        [
            "prepare",
            "--bids",
            str(bids_root),
            "--task",
            "imagery",
            "--events",
            "T1,T2",
            "--subjects",
            "1",
            "--channels",
            "C3,Cz,C4",
            "-o",
            str(tmp_path / "ev.h5"),
        ],
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "ev.h5")
    assert st.attrs["label_names"] == ["T1", "T2"] and st.attrs["recipe"]["line_freq"] == 60.0
    assert set(st.meta["subject"]) == {"sub-001"} and list(np.bincount(st.labels)) == [23, 22]
    # participants.tsv column as the label of every window of a subject (continuous 4-s windows)
    r = run(
        app,
        [
            "prepare",
            "--bids",
            str(bids_root),
            "--task",
            "imagery",
            "--label-column",
            "group",
            "--channels",
            "C3,Cz,C4",
            "-o",
            str(tmp_path / "grp.h5"),
        ],
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "grp.h5")
    assert st.attrs["label_names"] == ["A", "B"]
    for sub, y in (("sub-001", 0), ("sub-002", 1)):
        assert set(st.labels[st.meta["subject"] == sub]) == {y}
    # errors: one line naming the folder and the problem
    r = run(app, ["prepare", "--bids", str(tmp_path), "--task", "imagery", "-o", str(tmp_path / "x.h5")])
    assert r.exit_code == 2 and "not a BIDS dataset (no dataset_description.json)" in r.text
    r = run(app, ["prepare", "--bids", str(bids_root), "--task", "rest", "-o", str(tmp_path / "x.h5")])
    assert r.exit_code == 2 and "no EEG recording of task 'rest'" in r.text and "tasks there: ['imagery']" in r.text
    with pytest.raises(CardError, match=r"trial type\(s\) \['T9'\] are in no events.tsv"):
        from neurokit.cards import bids_card

        bids_card(bids_root, "imagery", events=["T9"])


def test_channels_renamed_after_mne_bids_wrote_them_and_subjects_by_number(tmp_path):
    """Issue 36 item 4: a BIDS dataset whose channels.tsv was edited after write_raw_bids (E1, E2, E3 renamed to C3,
    Cz, C4) is refused naming the option; --on-ch-mismatch rename reads it under channels.tsv's names; and
    --train-subjects 1 on the BIDS store selects sub-01."""
    root = tmp_path / "bids"
    rng = np.random.default_rng(0)
    for s in ("01", "02", "03"):
        raw = mne.io.RawArray(rng.normal(0, 2e-5, (3, 200 * 30)), mne.create_info(["E1", "E2", "E3"], 200.0, "eeg"))
        raw.set_annotations(mne.Annotations([2.0, 10.0, 18.0], [4.0] * 3, ["left", "right", "left"]))
        raw.info["line_freq"] = 50
        bp = mne_bids.BIDSPath(subject=s, task="mi", datatype="eeg", root=root)
        mne_bids.write_raw_bids(raw, bp, overwrite=True, allow_preload=True, format="EDF", verbose="error")
        tsv = bp.copy().update(suffix="channels", extension=".tsv").fpath
        tsv.write_text(tsv.read_text().replace("E1\t", "C3\t").replace("E2\t", "Cz\t").replace("E3\t", "C4\t"))
    from neurokit.cli.main import app

    def run(*extra, out="a.h5"):
        args = ["prepare", "--bids", str(root), "--task", "mi", "-o", str(tmp_path / out), *extra]
        return CliRunner().invoke(app, args, env={"COLUMNS": "300"})

    r = run()
    assert r.exit_code != 0 and "--on-ch-mismatch rename" in " ".join(r.output.split())
    r = run("--on-ch-mismatch", "rename")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "a.h5")
    assert list(st.info.ch_names) == ["C3", "Cz", "C4"]
    assert sorted(set(st.meta["subject"].astype(str))) == ["sub-01", "sub-02", "sub-03"]
    from neurokit.data.dataset import PatchDataset

    parts = PatchDataset(tmp_path / "a.h5", labelled=True).split({"train": ["S001"], "val": ["S002"], "test": ["S003"]})
    assert sorted({str(s) for s in parts["train"].meta("subject")}) == ["sub-01"]  # --train-subjects 1


def test_participants_and_events_tsv_with_a_byte_order_mark(tmp_path):
    """mne-bids 0.18 and spreadsheet programs write TSV files starting with a UTF-8 byte-order mark."""
    from neurokit.io.bids import read_participants, trial_types

    (tmp_path / "participants.tsv").write_text("participant_id\tage\nsub-01\t30\nsub-02\tn/a\n", encoding="utf-8-sig")
    assert read_participants(tmp_path) == {"01": {"age": "30"}, "02": {"age": "n/a"}}
    (tmp_path / "sub-01_task-a_events.tsv").write_text("trial_type\tonset\nleft\t1\nright\t2\n", encoding="utf-8-sig")
    assert trial_types(tmp_path / "sub-01_task-a_eeg.edf") == ["left", "right"]
