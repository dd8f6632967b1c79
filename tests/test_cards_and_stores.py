"""Data cards, prepare → HDF5 patch store (provenance, atomic writes), and the Dataset."""

import h5py
import numpy as np
import pytest
import torch

from neurokit._utils.errors import CardError, DataFileError, StoreError
from neurokit.cards import list_cards, load_card, parse_ranges
from neurokit.data import PatchDataset, PatchStore, PatchStoreWriter
from neurokit.pipelines.prepare import prepare

EEGMMIDB = "MNE-eegbci-data/files/eegmmidb/1.0.0"


def test_cards_listed_and_valid():
    names = list_cards()
    assert {"physionet_mi", "eeg_folder"} <= set(names)
    for n in names:
        c = load_card(n)
        assert c.raw["licence"] and c.raw["citation"] and c.raw["source"]


def test_physionet_card_facts():
    c = load_card("physionet_mi")
    assert c.raw["licence"].endswith("(ODC-By 1.0)")
    assert c.classes("motor_imagery_4class") == ["left_fist", "right_fist", "both_fists", "both_feet"]
    sp = c.splits("motor_imagery_4class")
    assert (len(sp["train"]), len(sp["val"]), len(sp["test"])) == (70, 19, 20) and sp["test"][0] == "S090"
    r = c.recipe()
    # CBraMod's PhysioNet-MI recipe: 0.3 Hz high-pass only, average reference, 60 Hz notch, 200 Hz, µV/100
    assert (r.l_freq, r.h_freq, r.line_freq, r.sfreq, r.scale, r.window_s) == (0.3, None, 60.0, 200.0, 1e4, 4.0)
    assert r.reference == "average" and not r.resample_first
    tueg = load_card("eeg_folder").recipe()  # TUEG: resample first, then 0.3-75 Hz; recordings < 5 min dropped
    assert (tueg.l_freq, tueg.h_freq, tueg.resample_first, tueg.min_duration_s) == (0.3, 75.0, True, 300.0)


def test_card_files_in_eegbci_layout(eeg_root):
    c = load_card("physionet_mi")
    lr = c.files(eeg_root, "left_right_imagery", download=False)
    assert len(lr) == 30 and lr[0].path.name == "S001R04.edf" and lr[0].events == {"T1": 0, "T2": 1}
    four = c.files(eeg_root, "motor_imagery_4class", subjects=[1, 4], download=False)
    runs = {(e.subject, e.run): e.events for e in four}
    assert len(four) == 10  # S001 runs 4/6/8/10/12/14, S004 runs 4/8/12/14
    assert runs[("S001", "R06")] == {"T1": 2, "T2": 3} and runs[("S004", "R14")] == {"T1": 2, "T2": 3}


def test_card_errors(tmp_path):
    with pytest.raises(CardError, match="no data card 'nope'; known cards: .*physionet_mi"):
        load_card("nope")
    with pytest.raises(CardError, match="no recording of task 'left_right_imagery'"):
        load_card("physionet_mi").files(tmp_path, "left_right_imagery", download=False)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nmodality: eeg\n")
    with pytest.raises(CardError, match=r"missing required field\(s\)"):
        load_card(bad)
    # a misspelt required key is named with the key it stands for (the review found only "missing" said)
    import yaml

    raw = yaml.safe_load(open(load_card("physionet_mi").path))
    raw["preprocesing"] = raw.pop("preprocessing")
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump(raw))
    with pytest.raises(
        CardError,
        match=r"missing required field\(s\) \['preprocessing'\] \(is 'preprocesing' a "
        r"misspelling of 'preprocessing'\?\)",
    ):
        load_card(typo)
    assert parse_ranges("1-3,7") == [1, 2, 3, 7]


def test_store_provenance(lr_store, eeg_root):
    s = PatchStore(lr_store)
    assert s.sample_shape == (21, 4, 200) and len(s) == 90  # S001, S002 × runs 4/8/12 × 15 trials
    assert s.attrs["ch_names"][:3] == ["FC5", "FC3", "FC1"] and s.attrs["sfreq"] == 200.0
    assert s.attrs["recipe"]["l_freq"] == 0.3 and s.attrs["recipe"]["reference"] == "average"
    assert s.attrs["card"] == "physionet_mi" and s.attrs["task"] == "left_right_imagery"
    src = {d["path"].split("/")[-1]: d["sha256"] for d in s.attrs["sources"]}
    sums = dict(
        l.split()[::-1] for l in (eeg_root / EEGMMIDB / "SHA256SUMS_S001.txt").read_text().splitlines() if l.strip()
    )
    assert src["S001R04.edf"] == sums["S001R04.edf"]
    assert sorted(set(s.meta["subject"])) == ["S001", "S002"] and set(s.labels) == {0, 1}
    with h5py.File(lr_store) as f:
        assert f["patches"].chunks == (1, 21, 4, 200)


def test_dataset(lr_store):
    ds = PatchDataset(lr_store, subjects=["S002"])
    assert len(ds) == 45
    x, y = ds[0]
    assert x.shape == (21, 4, 200) and x.dtype == torch.float32 and y.dtype == torch.int64


def test_failed_prepare_leaves_no_store(eeg_root, tmp_path):
    out = tmp_path / "s.h5"
    good = eeg_root / EEGMMIDB / "S001/S001R04.edf"
    bad = tmp_path / "S002R04.edf"  # a run the task labels: reading it fails
    bad.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(DataFileError, match="S002R04.edf"):
        prepare("physionet_mi", out, task="left_right_imagery", files=[good, bad], progress=False)
    assert not out.exists() and not (tmp_path / "s.h5.partial").exists()


def test_incomplete_store_refused(tmp_path):
    w = PatchStoreWriter(tmp_path / "x.h5", (2, 1, 200))
    w.append(np.zeros((3, 2, 1, 200)), np.zeros(3), subject="S1")
    w._f.flush()
    # simulate a killed process: the .partial file exists, the store does not
    with pytest.raises(FileNotFoundError, match="an unfinished x.h5.partial is there"):
        PatchStore(tmp_path / "x.h5")
    with pytest.raises(StoreError, match="incomplete store"):
        PatchStore(tmp_path / "x.h5.partial")
    w.close()
    assert len(PatchStore(tmp_path / "x.h5")) == 3


def test_writer_refuses_overwrite(lr_store):
    with pytest.raises(FileExistsError, match="overwrite=True"):
        PatchStoreWriter(lr_store, (1,))


def test_folder_corpus_card(eeg_root, tmp_path):
    """The pretraining-corpus card on a folder of real EDF files: 19 channels in 10-10 names, continuous
    windows, no labels."""
    import yaml

    from neurokit.cards import cards_dir

    folder = eeg_root / EEGMMIDB / "S001"
    body = yaml.safe_load((cards_dir() / "eeg_folder.yaml").read_text())
    # EEGMMIDB runs last about 2 min: the TUEG recipe drops recordings under 5 min, here all 12 (125 s each)
    with pytest.raises(
        DataFileError, match=r"no usable recording of 12 \(12 left out by the recipe's rules \(min_duration_s"
    ):
        prepare("eeg_folder", tmp_path / "c.h5", data_root=folder, progress=False)
    assert not (tmp_path / "c.h5").exists()
    # unreadable files skipped are counted beside the dropped ones (they were not)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "S001R99.edf").write_bytes(b"not an EDF at all" * 30)
    for run in ("S001R03.edf", "S001R04.edf"):
        (tmp_path / "bad" / run).write_bytes((folder / run).read_bytes())
    with pytest.raises(
        DataFileError,
        match=r"no usable recording of 3 \(1 skipped as bad files \(skip_bad=True\); 2 left out by the recipe's "
        r"rules \(min_duration_s",
    ):
        prepare("eeg_folder", tmp_path / "c.h5", data_root=tmp_path / "bad", progress=False, skip_bad=True)
    body["preprocessing"].update(crop_start_s=0.0, crop_end_s=0.0, window_s=10.0, reject_uv=None, min_duration_s=120.0)
    card = tmp_path / "short.yaml"
    card.write_text(yaml.safe_dump(body))
    out = prepare(card, tmp_path / "c.h5", data_root=folder, progress=False)
    s = PatchStore(out)
    assert s.sample_shape == (19, 10, 200)
    assert s.attrs["ch_names"] == body["preprocessing"]["channels"]
    assert len(s.attrs["sources"]) == 12 and np.all(s.labels == -1)
    assert s.attrs["dropped"] == []  # 125 s ≥ 120 s
    # resampled first (160 -> 200 Hz), then filtered at 200 Hz: the 75 Hz edge fits, nothing lowered
    assert s.attrs["sources"][0]["applied"] == {
        "sfreq_orig": 160.0,
        "encoding": "utf8",
        "resampled": [160.0, 200.0],
        "l_freq": 0.3,
        "h_freq": 75.0,
        "notch_hz": [60.0],
    }
    assert len(s) >= 12 * 12  # at least 12 windows of 10 s in each ~2-min run


@pytest.mark.parametrize(
    "edit, words",
    [
        (
            lambda c: c.update(readings={"units": "mV"}),
            ["unknown key 'readings' at the top level", "did you mean 'reading'?"],
        ),
        (
            lambda c: c["layout"].update(patern="*.edf"),
            ["unknown key 'patern' under 'layout'", "did you mean 'pattern'?"],
        ),
        (
            lambda c: next(iter(c["tasks"].values())).update(clases=["a", "b"]),
            ["unknown key 'clases' under 'tasks.", "did you mean 'classes'?"],
        ),
        (
            lambda c: next(iter(c["tasks"].values())).update(splits={"train": ["S001"], "valid": ["S002"]}),
            ["unknown key 'valid' under 'tasks.", "did you mean 'val'?"],
        ),
        (lambda c: c.update(reading={"unit": "mV"}), ["unknown key 'unit' under 'reading'", "did you mean 'units'?"]),
    ],
)
def test_card_keys_are_checked_at_every_level(tmp_path, edit, words):
    import yaml

    from neurokit._utils.errors import CardError
    from neurokit.cards import cards_dir, load_card

    raw = yaml.safe_load((cards_dir() / "eegmat.yaml").read_text())
    edit(raw)
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(CardError) as err:
        load_card(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: ") and all(w in msg for w in words), msg
