"""Subject ids checked where they are asked for (issue 19 item 16): PatchDataset(subjects=...) with an id the stores
lack, card subject ranges, and the --head message."""

import pytest

from neurokit._utils.errors import CardError, ConfigError
from neurokit.cards import format_ranges, load_card, parse_ranges
from neurokit.data.dataset import PatchDataset


def test_unknown_subject_is_named(lr_store, caplog):
    known = PatchDataset(lr_store).store_subjects
    assert known == ["S001", "S002"]
    with pytest.raises(
        ConfigError,
        match=r"no sample of subjects \['S999', 'sub-1'\] in the store\(s\); subjects there: \['S001', 'S002'\] \(.*lr.h5\)",
    ):
        PatchDataset(lr_store, subjects=["S999", "sub-1"])
    with caplog.at_level("WARNING", logger="neurokit"):
        assert len(PatchDataset(lr_store, subjects=["S001", "S999"])) == 45
    assert "subjects ['S999'] are in none of the stores" in caplog.text
    assert len(PatchDataset(lr_store, subjects=["S002"])) == 45


def test_subject_ranges_checked_against_the_card(eeg_root):
    card = load_card("physionet_mi")
    with pytest.raises(
        CardError,
        match=r"the subjects given \(subjects=\) ask for subjects 110,200, which the dataset does not have \(its subjects: 1-109\)",
    ):
        card.files(eeg_root, "left_right_imagery", subjects=[1, 110, 200], download=False)
    with pytest.raises(CardError, match=r"ask for subjects 110-100000, which") as err:  # a range, not 99,891 numbers
        card.files(eeg_root, "left_right_imagery", subjects=parse_ranges("1,110-100000"), download=False)
    assert len(str(err.value)) < 300
    eegmat = load_card("eegmat")
    with pytest.raises(CardError, match=r"no recording of subjects 9 under .*subjects there: S002, S003, S004"):
        eegmat.files(eeg_root, eegmat.task(None)[0], subjects=[2, 9])
    assert {e.subject for e in eegmat.files(eeg_root, eegmat.task(None)[0], subjects=[3])} == {"S003"}


def test_head_message_lists_m4oe():
    from neurokit.training.config import FinetuneConfig

    with pytest.raises(ConfigError, match=r"head='bogus': allowed .*m4oe"):
        FinetuneConfig(model="cbramod", head="bogus")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("3-1", r"subject range '3-1' runs backwards \(did you mean '1-3'\?\)"),
        ("", r"no subject in ''"),
        (" , ", r"no subject in ' , '"),
        ("1-30000000", r"subject range '1-30000000' names 30,000,000 subjects \(at most 1,000,000\)"),
        ("1-x", r"cannot parse subject range '1-x'"),
    ],
)
def test_subject_ranges_that_name_no_subject_or_too_many_are_refused(spec, message):
    with pytest.raises(CardError, match=message):
        parse_ranges(spec)
    assert parse_ranges("1-3,7,9-10") == [1, 2, 3, 7, 9, 10]
    assert format_ranges([10, 9, 7, 3, 2, 1]) == "1-3,7,9-10"


def test_prepare_with_a_backwards_subject_range_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    res = CliRunner().invoke(
        app,
        ["prepare", "physionet_mi", "--task", "left_right_imagery", "--subjects", "3-1", "-o", str(tmp_path / "s.h5")],
    )
    assert res.exit_code == 2 and "runs backwards (did you mean '1-3'?)" in res.output
    assert not (tmp_path / "s.h5").exists()


def test_folder_subject_numbers_are_the_first_number_of_the_id(eeg_root):
    """A file stem as subject id (S001R10) is subject 1, not 110: the first number, not every digit."""
    card = load_card("eeg_folder")
    root = eeg_root / "MNE-eegbci-data/files/eegmmidb/1.0.0/S001"
    task = card.task(None)[0]
    assert len(card.files(root, task, subjects=[1], download=False)) == 12
    with pytest.raises(CardError, match=r"no recording of subjects 110 under"):
        card.files(root, task, subjects=[110], download=False)
    with pytest.raises(CardError, match=r"no recording of subjects 2-100000 under"):  # a range, not 99,999 numbers
        card.files(root, task, subjects=parse_ranges("1-100000"), download=False)


@pytest.mark.parametrize("spec", ["²", "٣", "1-٣"])
def test_subject_ranges_take_ascii_digits_only(spec):
    with pytest.raises(CardError, match="cannot parse subject range"):
        parse_ranges(spec)


def test_one_subject_store_keeps_its_cards_split_of_recordings(tmp_path):
    """A card that splits recordings (split_unit: run, e.g. BCIC2020-3's competition folders) keeps its split on a
    one-subject store; the last-runs rule is only for cards that do not say."""
    import numpy as np

    from neurokit.data import PatchDataset
    from neurokit.data.splits import resolve_splits
    from neurokit.store.patch_store import PatchStoreWriter

    body = {"name": "c", "tasks": {"t": {"classes": ["a", "b"], "split_unit": "run",
                                         "splits": {"train": ["train"], "val": ["val"], "test": ["test"]}}}}  # fmt: skip
    attrs = dict(modality="eeg", card="c", task="t", card_body=body, label_names=["a", "b"], ch_names=["C3"],
                 sfreq=200.0)  # fmt: skip
    with PatchStoreWriter(tmp_path / "s.h5", (1, 1, 200), attrs=attrs) as w:
        for run in ("test", "train", "val"):  # sorted, the last-runs rule would train on 'test'
            w.append(np.zeros((2, 1, 1, 200), np.float32), np.array([0, 1]), subject="S01", session="1", run=run)
    how, kw = resolve_splits(PatchDataset(tmp_path / "s.h5", labelled=True))
    assert how == "run" and kw == {"train": {"runs": ["train"]}, "val": {"runs": ["val"]}, "test": {"runs": ["test"]}}
