"""Subject ids checked where they are asked for (issue 19 item 16): PatchDataset(subjects=...) with an id the stores
lack, card subject ranges, and the --head message."""

import pytest

from neurokit._utils.errors import CardError, ConfigError
from neurokit.cards import load_card
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
        match=r"--subjects ask for subjects \[110, 200\], which the dataset does not have "
        r"\(its subjects: 1-109\)",
    ):
        card.files(eeg_root, "left_right_imagery", subjects=[1, 110, 200], download=False)
    eegmat = load_card("eegmat")
    with pytest.raises(CardError, match=r"no recording of subjects \[9\].*subjects there: S002, S003, S004"):
        eegmat.files(eeg_root, eegmat.task(None)[0], subjects=[2, 9])
    assert {e.subject for e in eegmat.files(eeg_root, eegmat.task(None)[0], subjects=[3])} == {"S003"}


def test_head_message_lists_m4oe():
    from neurokit.pipelines.finetune import FinetuneConfig

    with pytest.raises(ConfigError, match=r"head='bogus': allowed .*m4oe"):
        FinetuneConfig(model="cbramod", head="bogus")
