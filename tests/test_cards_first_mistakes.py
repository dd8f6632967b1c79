"""Issue 44 items 10 and 11: a new user's first mistakes with cards get a remedy: a misspelt card name is answered
with the closest card, a typo in the preprocessing block of a task nobody prepares yet is refused as the card is
loaded, and SEED-VIG's sample count is the true one."""

from __future__ import annotations

import pytest
import yaml

from neurokit._utils.errors import CardError
from neurokit.cards import load_card


def test_a_misspelt_card_name_suggests_the_closest_card():
    with pytest.raises(CardError, match=r"no data card 'tuabb'; did you mean 'tuab'\? known cards: bcic2020_3"):
        load_card("tuabb")
    with pytest.raises(CardError, match=r"no data card 'zzzz'; known cards"):
        load_card("zzzz")


def test_a_typo_in_an_unused_tasks_preprocessing_is_refused(tmp_path):
    card = {
        "name": "own", "modality": "eeg", "title": "t", "source": "s", "licence": "l", "citation": ["c"],
        "layout": {"kind": "folder", "pattern": "*.edf"}, "preprocessing": {"window_s": 4.0},
        "tasks": {"used": {"classes": []}, "later": {"classes": [], "preprocessing": {"h_frq": 30.0}}},
    }  # fmt: skip
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(card))
    with pytest.raises(
        CardError, match=r"own\.yaml: unknown key 'h_frq' under 'tasks\.later\.preprocessing'; did you "
    ):
        load_card(path)
    card["tasks"]["later"]["preprocessing"] = {"h_freq": 30.0}
    path.write_text(yaml.safe_dump(card))
    assert load_card(path).recipe("later").h_freq == 30.0


def test_seed_vig_counts_its_samples_right():
    """885 windows × 8 s × 200 Hz = 1,416,000 samples per file (the card said 141,600)."""
    files = load_card("seed_vig").raw["recording"]["files"]
    assert "1,416,000 = 885 x 8 s x 200 Hz" in files and "141600" not in files


def test_the_cards_guide_gives_every_cards_source_and_files():
    """Issue 44 item 10: the cards table of the docs named no download source or folder layout per dataset."""
    from pathlib import Path

    from neurokit.cards import list_cards

    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "guide" / "cards.md").read_text().split())
    for name in list_cards():
        card = load_card(name)
        src = " ".join(str(card.raw.get("source", "")).split()).replace("|", "\\|")
        assert f"| `{name}` | {src} |" in doc, name
        files = (card.raw.get("recording") or {}).get("files")
        if files:
            assert " ".join(str(files).split()).replace("|", "\\|") in doc, name
    assert "on a partial copy the split differs" in doc  # FACED's departure from the release


def test_refusals_name_remedies_a_cli_user_can_take(tmp_path):
    """Issue 44 item 11: refusals named Python-only remedies (``raw.interpolate_bads()``, ``mne.read_annotations()``)
    to CLI users: a channel of NaN samples now names ``--channels`` through the CLI, ``channels=`` in Python."""
    import mne
    import numpy as np
    from typer.testing import CliRunner

    from neurokit._utils.errors import DataFileError
    from neurokit.cli.main import app
    from neurokit.io.eeg import check_finite

    with pytest.raises(DataFileError, match=r"in channels \['C4'\]\. Leave them out: list the channels to keep with "):
        check_finite(np.array([[0.0, 1.0], [np.nan, 1.0]]), ["C3", "C4"], "a.fif")
    data = tmp_path / "data"
    data.mkdir()
    x = np.random.default_rng(0).normal(0, 2e-5, (3, 200 * 310))
    x[2, 100:110] = np.nan
    raw = mne.io.RawArray(x, mne.create_info(["C3", "Cz", "C4"], 200.0, "eeg"), verbose="error")
    raw.save(data / "sub01_raw.fif", verbose="error")
    r = CliRunner().invoke(
        app,
        ["prepare", "eeg_folder", "--data-root", str(data), "-o", str(tmp_path / "s.h5"), "--channels", "C3,Cz,C4"],
        env={"COLUMNS": "400"},
    )
    said = " ".join(r.output.split())
    assert r.exit_code != 0 and "non-finite samples (NaN/inf) in channels ['C4']" in said, said
    assert "list the channels to keep with --channels" in said and "interpolate_bads" not in said


def test_dataset_spellings_of_card_names_find_the_card():
    """Review of issue 44: ``neuro cards show TUAB`` / ``SEED-VIG`` / ``CHB-MIT`` suggested nothing."""
    for name, card in (("TUAB", "tuab"), ("SEED-VIG", "seed_vig"), ("CHB-MIT", "chb_mit"), ("chbmit", "chb_mit")):
        with pytest.raises(CardError, match=rf"did you mean '{card}'\?"):
            load_card(name)


def test_a_negative_seizure_time_is_refused_naming_the_line(tmp_path):
    from neurokit._utils.errors import DataFileError
    from neurokit.datasets.chbmit import read_summary

    p = tmp_path / "chb01-summary.txt"
    p.write_text(
        "File Name: chb01_03.edf\nNumber of Seizures in File: 1\nSeizure Start Time: -5 seconds\n"
        "Seizure End Time: 10 seconds\n"
    )
    with pytest.raises(DataFileError, match=r"chb01-summary\.txt:3: .*a time before the recording's start"):
        read_summary(p)
