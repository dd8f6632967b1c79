"""Recordings at the edges (issue 7, items 1-7): the shared cases in ../shared/cases/edges with the right
values their README states, and other examples of the same kinds built here (BDF+D, mV and blank units,
Latin-1 labels, clashing names, stim-channel triggers)."""

import warnings

import mne
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import neurokit
from edf_build import write_edf
from neurokit._utils.errors import DataFileError
from neurokit.cli.main import app
from neurokit.data import PatchStore
from neurokit.pipelines.prepare import prepare
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw

runner = CliRunner()
SINE_RMS = 20 / np.sqrt(2)  # µV: the 20 µV-peak sines of the shared cases


@pytest.fixture(scope="module")
def edges(shared):
    return shared / "cases" / "edges"


def _card(tmp_path, edges, **pre):
    """plain_card.yaml with preprocessing/reading overrides (reading keys: encoding, units)."""
    body = yaml.safe_load((edges / "plain_card.yaml").read_text())
    reading = {k: pre.pop(k) for k in ("encoding", "units") if k in pre}
    if reading:
        body["reading"] = reading
    body["preprocessing"].update(pre)
    p = tmp_path / f"card{len(list(tmp_path.glob('card*.yaml')))}.yaml"
    p.write_text(yaml.safe_dump(body, allow_unicode=True))
    return p


def _rms_uv(store):
    s = PatchStore(store)
    x = s.patches(slice(None)) * 100.0  # 100 µV units → µV
    return s, np.sqrt((x**2).mean(axis=(0, 2, 3)))


# ------------------------------------------------------------------------------------------ 1. EDF+D / BDF+D
def test_edf_plus_d_time_follows_records(edges, tmp_path, caplog):
    f = edges / "edf_plus_d_gap.edf"
    out = prepare(edges / "plain_card.yaml", tmp_path / "d.h5", task="lr", files=[f], progress=False)
    assert (
        "edf_plus_d_gap.edf: events [\"'T2' at 40 s\"] lie in a recording gap (30–100 s) and are skipped" in caplog.text
    )
    s = PatchStore(out)
    assert list(s.meta["onset"]) == [10.0, 105.0] and list(s.labels) == [0, 0]  # T1 at 10 s and 105 s
    x = s.patches(slice(None)) * 100.0  # every sample's value in µV is its true time in s
    t = np.arange(800) / 200.0
    np.testing.assert_allclose(x[1, 0].ravel(), 105.0 + t, atol=0.02)  # the window at 105 s holds 105…109
    np.testing.assert_allclose(x[0, 2].ravel(), 10.0 + t, atol=0.02)
    assert s.attrs["sources"][0]["applied"]["gaps_s"] == [[30.0, 100.0]]


def test_bdf_plus_d_sliding_windows_never_span_a_gap(tmp_path):
    sf = 256
    on = np.r_[np.arange(10), np.arange(9) + 50.0]  # records cover 0-10 s and 50-59 s
    true = np.r_[np.arange(10 * sf), np.arange(9 * sf)] / sf + np.r_[np.zeros(10 * sf), np.full(9 * sf, 50.0)]
    p = write_edf(
        tmp_path / "gap.bdf",
        np.vstack([true, 2 * true]),
        sf,
        ["C3", "C4"],
        onsets=on,
        bdf=True,
        plus="D",
        annotations=[(2, "T1"), (20, "T2"), (52, "T2")],
    )
    with pytest.warns(RuntimeWarning, match=r"gap.bdf: events \[\"'T2' at 20 s\"\] lie in a recording gap \(10–50 s\)"):
        raw = neurokit.read_eeg(p)
    rec = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, window_s=4.0)
    raw = preprocess_raw(raw, rec)
    w = make_windows(raw, rec)  # continuous windows: two in the first piece, two in the second
    np.testing.assert_array_equal(w.onsets, [0.0, 4.0, 50.0, 54.0])
    for x, o in zip(w.patches, w.onsets):
        np.testing.assert_allclose(x[0].ravel() * 100, o + np.arange(800) / 200.0, atol=0.05)
    ev = make_windows(raw, EEGRecipe.from_dict({**rec.to_dict(), "events": {"T1": 0, "T2": 1}}))
    np.testing.assert_array_equal(ev.onsets, [2.0, 52.0])
    np.testing.assert_array_equal(ev.labels, [0, 1])


def test_repeated_record_refused(tmp_path):
    sf = 128
    data = np.random.default_rng(0).normal(0, 10, (2, 6 * sf))
    p = write_edf(tmp_path / "rep.edf", data, sf, ["C3", "C4"], onsets=[0, 1, 2, 2, 3, 4])
    with pytest.raises(
        DataFileError,
        match=r"rep.edf: data record 4 starts at 2 s, before record 3 ends \(3 s\): "
        r"a repeated or out-of-order record",
    ):
        neurokit.read_eeg(p)
    # time-stamps rounded to the millisecond (1/3-s records) are neither gaps nor repeats
    p = write_edf(
        tmp_path / "third.edf",
        data[:, : 5 * 43],
        129,
        ["C3", "C4"],
        record_s=1 / 3,
        onsets=[0, 0.333, 0.667, 1.0, 1.333],
    )
    raw = neurokit.read_eeg(p)
    assert raw.n_times == 5 * 43 and "neurokit_segments" not in raw.info["temp"]


# --------------------------------------------------------------------------------------------- 2. encodings
def test_latin1_annotations(edges, tmp_path):
    f = edges / "latin1_annotation.edf"
    with pytest.warns(
        RuntimeWarning, match=r"latin1_annotation.edf: annotation text is not valid UTF-8; decoded as Latin-1"
    ):
        raw = neurokit.read_eeg(f)
    assert list(raw.annotations.description) == ["T1", "T2", "Réponse"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stated: no warning
        assert "Réponse" in neurokit.read_eeg(f, encoding="latin1").annotations.description
    # the card's reading block and the CLI option reach the reader
    out = prepare(_card(tmp_path, edges, encoding="latin1"), tmp_path / "a.h5", task="lr", files=[f], progress=False)
    assert PatchStore(out).attrs["sources"][0]["applied"]["encoding"] == "latin1"
    r = runner.invoke(
        app,
        [
            "prepare",
            str(edges / "plain_card.yaml"),
            "--task",
            "lr",
            "-f",
            str(f),
            "--encoding",
            "latin1",
            "-o",
            str(tmp_path / "b.h5"),
        ],
    )
    assert r.exit_code == 0, r.output
    # another single-byte text: a Windows-1252 annotation, stated
    sf = 128
    p = write_edf(
        tmp_path / "cp.edf",
        np.ones((1, 4 * sf)) * np.sin(np.arange(4 * sf)),
        sf,
        ["Cz"],
        annotations=[(1, "T1"), (2, "Müdigkeit – Ende")],
        encoding="cp1252",
    )
    assert "Müdigkeit – Ende" in neurokit.read_eeg(p, encoding="cp1252").annotations.description


# ------------------------------------------------------------------------------------------------- 3. units
def test_blank_units_warned_and_stated(edges, tmp_path, caplog):
    f = edges / "blank_units.edf"
    out = prepare(edges / "plain_card.yaml", tmp_path / "u.h5", task="lr", files=[f], progress=False)
    assert (
        "blank_units.edf: channels ['C3', 'Cz', 'C4'] have a blank or non-voltage physical unit ([''])" in caplog.text
    )
    s, rms = _rms_uv(out)
    np.testing.assert_allclose(rms, SINE_RMS, rtol=1e-3)  # not 1.4e7
    assert s.attrs["sources"][0]["applied"]["units_assumed"] == {"C3": "uV", "Cz": "uV", "C4": "uV"}
    caplog.clear()
    out = prepare(_card(tmp_path, edges, units="uV"), tmp_path / "v.h5", task="lr", files=[f], progress=False)
    assert "unit" not in caplog.text  # the card states the unit: no warning
    np.testing.assert_allclose(_rms_uv(out)[1], SINE_RMS, rtol=1e-3)
    r = runner.invoke(
        app,
        [
            "prepare",
            str(edges / "plain_card.yaml"),
            "--task",
            "lr",
            "-f",
            str(f),
            "--units",
            "mV",
            "-o",
            str(tmp_path / "w.h5"),
        ],
    )  # the CLI option, here a deliberate 1000× statement
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(_rms_uv(tmp_path / "w.h5")[1], 1000 * SINE_RMS, rtol=1e-3)


def test_other_units(tmp_path):
    sf, t = 200, np.arange(4 * 200) / 200
    mv = 0.02 * np.sin(2 * np.pi * 10 * t)  # 20 µV peak written in mV
    for unit, factor in (("mV", 1.0), ("nV", 1e6), ("uv", 1e3), ("V", 1e-3)):  # MNE alone reads nV and uv as V
        p = write_edf(tmp_path / "u.edf", np.vstack([mv, mv]) * factor, sf, ["C3", "C4"], units=unit)
        raw = neurokit.read_eeg(p, preload=True)
        np.testing.assert_allclose(np.abs(raw.get_data()).max(axis=1), 20e-6, rtol=1e-3, err_msg=unit)
    # blank unit stated as mV (option), per channel; a non-voltage unit marks a non-EEG channel (issue 19 item 16)
    p = write_edf(tmp_path / "blank_mv.edf", np.vstack([mv, mv]), sf, ["C3", "C4"], units=["", "mV"])
    raw = neurokit.read_eeg(p, units={"C3": "mV"}, preload=True)
    np.testing.assert_allclose(np.abs(raw.get_data()).max(axis=1), 20e-6, rtol=1e-3)
    uv = 20 * np.sin(2 * np.pi * 10 * t)
    p = write_edf(tmp_path / "odd.edf", np.vstack([uv, uv]), sf, ["C3", "C4"], units=["uV", "degC"])
    with pytest.warns(
        RuntimeWarning, match=r"odd.edf: channels \['C4'\] have non-voltage physical units \['degC'\]: read as non-EEG"
    ):
        raw = neurokit.read_eeg(p, preload=True)
    assert raw.ch_names == ["C3"]
    np.testing.assert_allclose(np.abs(raw.get_data()).max(axis=1), 20e-6, rtol=1e-3)
    # an unknown unit that is no known non-voltage one is still taken as µV with a warning
    p = write_edf(tmp_path / "odd2.edf", np.vstack([uv, uv]), sf, ["C3", "C4"], units=["uV", "counts"])
    with pytest.warns(
        RuntimeWarning, match=r"channels \['C4'\] have a blank or non-voltage physical unit \(\['counts'\]\)"
    ):
        raw = neurokit.read_eeg(p, preload=True)
    np.testing.assert_allclose(np.abs(raw.get_data()).max(axis=1), 20e-6, rtol=1e-3)


# ---------------------------------------------------------------------------------- 4. uncalibrated channels
def test_uncalibrated_channel_kept_out(edges, tmp_path, caplog):
    f = edges / "uncalibrated_channel.edf"
    out = prepare(edges / "plain_card.yaml", tmp_path / "c.h5", task="lr", files=[f], progress=False)
    assert "uncalibrated_channel.edf: channels ['Cz'] are uncalibrated" in caplog.text
    s, rms = _rms_uv(out)
    assert s.attrs["ch_names"] == ["C3", "C4"] and s.attrs["sources"][0]["applied"]["dropped_channels"] == ["Cz"]
    np.testing.assert_allclose(rms, SINE_RMS, rtol=1e-3)
    with pytest.raises(
        DataFileError, match=r"uncalibrated_channel.edf: channels \['Cz'\] required by the recipe are marked bad"
    ):
        prepare(
            _card(tmp_path, edges, channels=["C3", "Cz", "C4"]), tmp_path / "x.h5", task="lr", files=[f], progress=False
        )
    p = write_edf(tmp_path / "allbad.edf", np.ones((2, 800)), 200, ["C3", "C4"], phys=[(1, 1), (2, 2)])
    with pytest.raises(
        DataFileError, match=r"allbad.edf: every channel is marked bad .*\['C3', 'C4'\]; nothing to store"
    ):
        prepare(edges / "plain_card.yaml", tmp_path / "y.h5", task="lr", files=[p], progress=False)


def test_uncalibrated_channel_out_of_average_reference(tmp_path):
    """Under an average reference the mean is over calibrated channels only."""
    sf, t = 200, np.arange(8 * 200) / 200
    c3, c4 = 20 * np.sin(2 * np.pi * 10 * t), 10 * np.sin(2 * np.pi * 7 * t)
    p = write_edf(
        tmp_path / "cal.edf",
        np.vstack([c3, np.full_like(t, 3.0), c4]),
        sf,
        ["C3", "Cz", "C4"],
        phys=[(-25, 25), (5, 5), (-25, 25)],
        annotations=[(1, "T1")],
    )
    raw = neurokit.read_eeg(p)
    assert raw.info["bads"] == ["Cz"]
    rec = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, reference="average", events={"T1": 0})
    raw = preprocess_raw(raw, rec)
    w = make_windows(raw, rec)
    assert w.ch_names == ["C3", "C4"]
    want = (c3 - (c3 + c4) / 2)[200:1000]
    np.testing.assert_allclose(w.patches[0, 0].ravel() * 100, want, atol=0.01)


# ------------------------------------------------------------------------------------------ 5. name clashes
def test_name_clash_named_and_skipped(edges, tmp_path):
    f = edges / "old_and_new_names.edf"
    msg = r"old_and_new_names.edf: channels \['T3', 'T7'\] all become T7 after name standardisation \(T3 is the old 10-20 name of T7\)"
    with pytest.raises(DataFileError, match=msg):
        neurokit.read_eeg(f)
    assert neurokit.read_eeg(f, normalize_names=False).ch_names == ["C3", "T3", "T7", "Cz"]
    r = runner.invoke(
        app, ["prepare", str(edges / "plain_card.yaml"), "--task", "lr", "-f", str(f), "-o", str(tmp_path / "n.h5")]
    )
    assert r.exit_code == 2 and "T3" in r.output and "Traceback" not in r.output
    good = edges / "blank_units.edf"
    r = runner.invoke(
        app,
        [
            "prepare",
            str(edges / "plain_card.yaml"),
            "--task",
            "lr",
            "-f",
            str(f),
            "-f",
            str(good),
            "--skip-bad",
            "-o",
            str(tmp_path / "n.h5"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert [d["path"].split("/")[-1] for d in PatchStore(tmp_path / "n.h5").attrs["sources"]] == ["blank_units.edf"]
    # another clash: a prefixed label and the plain one
    p = write_edf(tmp_path / "fp1.edf", np.random.default_rng(0).normal(0, 10, (2, 400)), 200, ["EEG Fp1-REF", "Fp1"])
    with pytest.raises(DataFileError, match=r"fp1.edf: channels \['EEG Fp1-REF', 'Fp1'\] all become Fp1"):
        neurokit.read_eeg(p)


def test_reader_faults_become_neurokit_errors(tmp_path, monkeypatch):
    import neurokit.io.eeg as io_eeg

    p = write_edf(tmp_path / "ok.edf", np.random.default_rng(0).normal(0, 10, (2, 400)), 200, ["C3", "C4"])

    def boom(*a, **k):
        raise AssertionError  # a bare failed check, as MNE's readers raise them

    monkeypatch.setattr(io_eeg, "montage_for", boom)
    with pytest.raises(
        DataFileError, match=r"ok.edf: could not read this file \(AssertionError: failed check `raise AssertionError"
    ):
        neurokit.read_eeg(p)


# ------------------------------------------------------------------------------------ 6. stim-channel events
def test_stim_channel_events(eeg_root, tmp_path):
    f = eeg_root / "formats/bdf/test_bdf_stim_channel.bdf"
    raw = neurokit.read_eeg(f)
    rec = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, window_s=1.0, events={"T1": 0})
    raw = preprocess_raw(raw, rec)
    with pytest.raises(
        DataFileError,
        match=r"test_bdf_stim_channel.bdf: no annotation matches the card's events \['T1'\] "
        r"\(annotations found: none\); the Status channel holds 9 triggers with codes "
        r"\[1, 2, 4\]: map them in the card's events",
    ):
        make_windows(raw, rec)
    w = make_windows(raw, EEGRecipe.from_dict({**rec.to_dict(), "events": {"1": 0, "4": 1}}))
    ev = mne.find_events(mne.io.read_raw_bdf(f, verbose="error"), shortest_event=1, verbose="error")
    want = ev[np.isin(ev[:, 2], [1, 4])]
    want = want[want[:, 0] / 500.0 + 1.0 <= 10.0]  # windows must end inside the 10-s recording
    np.testing.assert_allclose(w.onsets, want[:, 0] / 500.0, atol=1 / 200)
    np.testing.assert_array_equal(w.labels, (want[:, 2] == 4).astype(int))


# ----------------------------------------------------------------------------------- 7. applied = recorded
def test_store_records_applied_parameters(tmp_path, eeg_root):
    """A 128 Hz recording under a 0.3-75 Hz filter-first recipe: the store says 57.6 Hz was applied."""
    sf, t = 128, np.arange(20 * 128) / 128
    rng = np.random.default_rng(1)
    data = np.vstack([20 * np.sin(2 * np.pi * 10 * t), rng.normal(0, 5, t.size), 10 * np.sin(2 * np.pi * 6 * t)])
    p = write_edf(tmp_path / "r128.edf", data, sf, ["C3", "Cz", "C4"], phys=[(-25, 25), (0, 0), (-25, 25)])
    card = yaml.safe_load((neurokit.cards.cards_dir() / "eeg_folder.yaml").read_text())
    card["preprocessing"].update(
        resample_first=False,
        min_duration_s=0.0,
        crop_start_s=0.0,
        crop_end_s=0.0,
        window_s=4.0,
        reject_uv=None,
        channels=None,
        reference="average",
    )
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card))
    out = prepare(tmp_path / "c.yaml", tmp_path / "s.h5", files=[p], progress=False)
    s = PatchStore(out)
    assert s.attrs["recipe"]["h_freq"] == 75.0  # the card's recipe, as written
    assert s.attrs["sources"][0]["applied"] == {
        "sfreq_orig": 128.0,
        "encoding": "utf8",
        "bad_channels": ["Cz"],
        "dropped_channels": ["Cz"],
        "reference": "average",
        "l_freq": 0.3,
        "h_freq": 57.6,
        "notch_hz": [60.0],
        "resampled": [128.0, 200.0],
    }
