"""Folder layouts (issue 19 items 11, 15, 16): subject ids from a rule the user sees and sets, split FIF parts read
once through the first part, run groups that match no file said so."""

import mne
import numpy as np
import pytest
from card_build import write_card

from neurokit._utils.errors import CardError, DataFileError
from neurokit.cards import SUBJECT_PATTERN, load_card, run_of, subject_of
from neurokit.io.eeg import drop_split_parts, fif_split_first
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare

EEGMAT = "eegmat/1.0.0"


def _card(tmp_path, pattern="*.edf", tasks=None, **layout):
    return write_card(
        tmp_path,
        layout={"kind": "folder", "pattern": pattern, **layout},
        tasks=tasks or {"pre": {"classes": []}},
        preprocessing={"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 4.0},
    )


def test_eegmat_rest_and_task_files_are_one_subject(eeg_root, tmp_path):
    files = load_card("eeg_folder").files(eeg_root / EEGMAT, "pretrain")
    by_subject = {}
    for e in files:
        by_subject.setdefault(e.subject, []).append(e.path.name)
    assert by_subject == {
        "Subject02": ["Subject02_1.edf", "Subject02_2.edf"],
        "Subject03": ["Subject03_1.edf", "Subject03_2.edf"],
        "Subject04": ["Subject04_1.edf", "Subject04_2.edf"],
    }
    # the card (or --subject-pattern) sets the rule: here each file its own id
    own = _card(tmp_path, subject_pattern=r"(?P<subject>Subject\d+_\d)")
    assert [e.subject for e in own.files(eeg_root / EEGMAT, "pre")][:2] == ["Subject02_1", "Subject02_2"]


def test_subject_rule():
    assert subject_of("Subject02_1.edf") == subject_of("Subject02_2.edf") == "Subject02"
    assert subject_of("aaaaaaab_s001_t000.edf") == "aaaaaaab"  # TUEG: the patient, not the session
    assert subject_of("a/b/sub-07/eeg/sub-07_task-rest_eeg.edf") == "sub-07"
    assert subject_of("S001/S001R04.edf", r"^(?P<subject>[^/]+)/") == "S001"
    assert subject_of("x/S001R04.edf", r"(S\d{3})R") == "S001"
    assert SUBJECT_PATTERN == r"(?:^|/)(?:[lr]h\.)?(?P<subject>[^/_.]+)[^/]*$"
    # FreeSurfer hemisphere files: the subject, not the hemisphere (lh./rh. names, a subject's surf/ folder)
    assert subject_of("lh.sub01.fsaverage5.mgz") == subject_of("rh.sub01.fsaverage5.mgz") == "sub01"
    assert subject_of("bert/surf/lh.rest.fsaverage5.mgz") == subject_of("bert/surf/rh.rest.fsaverage5.mgz") == "bert"
    assert subject_of("lhasa_01.edf") == "lhasa" and subject_of("rest/lh.x.mgz") == "x"
    with pytest.raises(CardError, match=r"does not match the file 'rec\.edf'"):
        subject_of("rec.edf", r"Subject(?P<subject>\d+)")
    with pytest.raises(CardError, match="not a valid regular expression"):
        subject_of("rec.edf", "(")
    # a run comes from where the layout says (BIDS run-, the pattern's run group), never from a number ending a name
    assert (
        run_of("Subject02_2.edf"),
        run_of("S001R04.edf"),
        run_of("sub-1_task-a_run-03_eeg.edf"),
        run_of("rec_raw.fif"),
        run_of("t4_and_t8.edf"),
        run_of("rec_v2.edf"),
        run_of("S1_2024.edf"),
    ) == (None, None, 3, None, None, None, None)
    assert run_of("Subject02_2.edf", r"(?P<subject>Subject\d+)_(?P<run>\d+)") == 2
    assert run_of("S001/S001R04.edf", r"(?P<subject>S\d+)R(?P<run>\d+)") == 4


def _split_recording(folder, seconds=600):
    info = mne.create_info(["C3", "Cz", "C4"], 200.0, "eeg")
    raw = mne.io.RawArray(np.random.default_rng(0).normal(0, 1e-5, (3, int(200 * seconds))), info, verbose="error")
    raw.save(folder / "rec_raw.fif", split_size="2MB", buffer_size_sec=1.0, verbose="error")
    raw = mne.io.RawArray(-raw.get_data(), info, verbose="error")  # another recording: not a copy of the first
    raw.save(
        folder / "sub-01_task-rest_eeg.fif", split_size="2MB", buffer_size_sec=1.0, split_naming="bids", verbose="error"
    )


def test_split_fif_parts_are_read_once_through_the_first(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _split_recording(data)
    names = sorted(p.name for p in data.iterdir())
    assert names == [
        "rec_raw-1.fif",
        "rec_raw.fif",
        "sub-01_task-rest_split-01_eeg.fif",
        "sub-01_task-rest_split-02_eeg.fif",
    ]
    card = _card(tmp_path, pattern="*.fif")
    files = card.files(data, "pre")
    assert [(e.path.name, e.subject) for e in files] == [
        ("rec_raw.fif", "rec"),
        ("sub-01_task-rest_split-01_eeg.fif", "sub-01"),
    ]
    out = prepare(card, tmp_path / "s.h5", data_root=data, progress=False)
    st = PatchStore(out)
    try:
        assert len(st) == 2 * 150  # 600 s of each recording in 4-s windows, each read once
        assert sorted(set(st.meta["subject"].astype(str))) == ["rec", "sub-01"]
        assert st.info.extra["subject_files"] == {
            "rec": ["rec_raw.fif"],
            "sub-01": ["sub-01_task-rest_split-01_eeg.fif"],
        }
        assert "subject_pattern" in st.info.extra["subject_rule"]
    finally:
        st.close()
    # -f with every part: the same
    parts = sorted(data.iterdir())
    out = prepare(card, tmp_path / "f.h5", files=parts, progress=False)
    st = PatchStore(out)
    try:
        assert len(st) == 300
    finally:
        st.close()


def test_split_part_rule():
    from pathlib import Path

    assert fif_split_first("rec_raw-2.fif", present={Path("rec_raw.fif")}) == Path("rec_raw.fif")
    assert fif_split_first("run-1.fif", present={Path("x.fif")}) is None  # no first part: a recording of its own
    assert fif_split_first("sub-1_split-01_eeg.fif") is None
    assert fif_split_first("sub-1_split-03_eeg.fif") == Path("sub-1_split-01_eeg.fif")
    kept, later = drop_split_parts([Path("sub-1_split-01_eeg.fif"), Path("sub-1_split-02_eeg.fif"), Path("a.edf")])
    assert kept == [Path("sub-1_split-01_eeg.fif"), Path("a.edf")]
    assert later == {Path("sub-1_split-02_eeg.fif"): Path("sub-1_split-01_eeg.fif")}
    # a later part without its first part is refused, naming the missing first part
    with pytest.raises(DataFileError, match=r"split-02_eeg.fif.*first part sub-1_split-01_eeg.fif is not among"):
        drop_split_parts([Path("sub-1_split-02_eeg.fif"), Path("a.edf")])


def test_run_groups_matching_no_file_are_said(eeg_root, tmp_path):
    tasks = {"lr": {"classes": ["rest", "task"], "run_groups": [{"runs": [0], "events": {"T1": "rest"}}]}}
    runs = r"(?P<subject>Subject\d+)_(?P<run>\d+)"
    card = _card(tmp_path, tasks=tasks, subject_pattern=runs)
    with pytest.raises(CardError, match=r"run_groups ask for runs \[0\].*runs found: \[1, 2\]; a run is the BIDS"):
        card.files(eeg_root / EEGMAT, "lr")
    # without a 'run' group the layout names no run: the trailing digit of Subject02_2.edf is not one
    tasks["lr"]["run_groups"] = [{"runs": [2], "events": {"T1": "task"}}, {"runs": [1], "events": {"T1": "rest"}}]
    with pytest.raises(CardError, match=r"runs found: none; a run is the BIDS run- entity or the 'run' group"):
        _card(tmp_path, tasks=tasks).files(eeg_root / EEGMAT, "lr")
    tasks["lr"]["run_groups"] = [{"runs": [2], "events": {"T1": "task"}}]
    files = _card(tmp_path, tasks=tasks, subject_pattern=runs).files(eeg_root / EEGMAT, "lr")
    assert [e.path.name for e in files] == ["Subject02_2.edf", "Subject03_2.edf", "Subject04_2.edf"]
    assert all(e.events == {"T1": 1} for e in files)


def test_subject_pattern_option(eeg_root, tmp_path):
    card = _card(tmp_path)
    out = prepare(
        card,
        tmp_path / "s.h5",
        data_root=eeg_root / EEGMAT,
        progress=False,
        subjects=[2],
        subject_pattern=r"Subject(?P<subject>\d+)_",
        crop_start_s=0.0,
        window_s=30.0,
    )
    st = PatchStore(out)
    try:
        assert sorted(set(st.meta["subject"].astype(str))) == ["02"]
        assert st.info.extra["subject_files"] == {"02": ["Subject02_1.edf", "Subject02_2.edf"]}
    finally:
        st.close()


def test_cli_subject_pattern(tmp_path):
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    data = tmp_path / "data"
    data.mkdir()
    _split_recording(data, seconds=40)
    card = _card(tmp_path, pattern="*.fif")
    r = CliRunner().invoke(
        app,
        [
            "prepare",
            str(card.path),
            "--data-root",
            str(data),
            "-o",
            str(tmp_path / "s.h5"),
            "--subject-pattern",
            r"^(?P<subject>[a-z]+)",
        ],
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    try:
        assert st.info.extra["subject_files"] == {"rec": ["rec_raw.fif"], "sub": ["sub-01_task-rest_eeg.fif"]}
        assert "^(?P<subject>[a-z]+)" in st.info.extra["subject_rule"]
    finally:
        st.close()
    r = CliRunner().invoke(
        app,
        [
            "prepare",
            str(card.path),
            "--data-root",
            str(data),
            "-o",
            str(tmp_path / "t.h5"),
            "--subject-pattern",
            r"Subject(?P<subject>\d+)",
        ],
    )
    assert r.exit_code == 2 and "does not match the file 'rec_raw.fif'" in r.output and "Traceback" not in r.output


def test_bids_split_parts_read_once(tmp_path):
    """BIDS layouts already read split-01 only (mne-bids' split entity); kept here beside the folder rule."""
    import json

    from neurokit.io.bids import find_recordings, read_bids_eeg

    eeg = tmp_path / "bids" / "sub-01" / "eeg"
    eeg.mkdir(parents=True)
    (tmp_path / "bids" / "dataset_description.json").write_text(json.dumps({"Name": "x", "BIDSVersion": "1.8.0"}))
    info = mne.create_info(["C3", "Cz", "C4"], 200.0, "eeg")
    raw = mne.io.RawArray(np.random.default_rng(0).normal(0, 1e-5, (3, 200 * 600)), info, verbose="error")
    raw.save(
        eeg / "sub-01_task-rest_eeg.fif", split_size="2MB", buffer_size_sec=1.0, split_naming="bids", verbose="error"
    )
    recs = find_recordings(tmp_path / "bids", "rest")
    assert [r.path.name for r in recs] == ["sub-01_task-rest_split-01_eeg.fif"]
    assert read_bids_eeg(recs[0].path).n_times == 200 * 600


def test_one_run_group_does_not_take_files_of_no_run(tmp_path):
    """Review of issue 35 item 6: files whose layout names no run (t4_and_t8.edf, rec_v2.edf) count as run 0; a task
    whose only group names run 8 labels none of them and says where runs come from."""
    from edf_build import write_edf

    data = tmp_path / "data"
    data.mkdir()
    for i, name in enumerate(["t4_and_t8.edf", "rec_v2.edf", "S1_2024.edf"]):
        write_edf(data / name, np.random.default_rng(i).normal(0, 20, (2, 200 * 10)), 200.0, ["C3", "C4"])
    tasks = {"lr": {"classes": ["a", "b"], "run_groups": [{"runs": [8], "events": {"T1": "a"}}]}}
    with pytest.raises(CardError, match=r"ask for runs \[8\].*runs found: none; a run is the BIDS run- entity"):
        _card(tmp_path, tasks=tasks).files(data, "lr")
    tasks["lr"]["run_groups"] = [{"runs": [0], "events": {"T1": "a"}}]  # run 0: the files of no run
    assert len(_card(tmp_path, tasks=tasks).files(data, "lr")) == 3
