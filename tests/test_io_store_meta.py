"""Typed metadata: store attributes (StoreMeta), a recording's notes (RawNotes), the preparers' options
and the recipes of surface cards."""

from __future__ import annotations

import math

import mne
import numpy as np
import pytest

from neurokit._utils.errors import CardError, ConfigError, StoreError
from neurokit.cards import DataCard, load_card
from neurokit.cards.recipes import EEGRecipe, SurfaceRecipe
from neurokit.data.dataset import PatchDataset
from neurokit.geometry.channels import ChannelRenames
from neurokit.io.notes import RawNotes, raw_notes, set_raw_notes
from neurokit.store.patch_store import FORMAT, PatchStore, PatchStoreWriter, StoreMeta
from neurokit.preprocessing.eeg.prepare import EEGJob, _eeg_job
from neurokit.preprocessing.options import (
    EEGOptions,
    PrepareOptions,
    SurfaceOptions,
    build_options,
    option_names,
)
from neurokit.preprocessing.surface.store import SurfaceRun, SurfaceStoreOptions, write_surface_store

FSA5_L = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.lh.first100TR.mgz"


def test_eeg_store_meta_is_typed(lr_store):
    st = PatchStore(lr_store)
    info = st.info
    assert isinstance(info, StoreMeta) and info.format == FORMAT and info.complete
    assert info.modality == "eeg" and info.card == "physionet_mi" and info.task == "left_right_imagery"
    assert info.ch_names == tuple(st.attrs["ch_names"]) and isinstance(info.ch_names, tuple)
    assert info.sfreq == 200.0 and info.patch_size == 200 and info.units == "100 uV"
    assert info.label_names == tuple(st.attrs["label_names"]) and info.recipe == st.attrs["recipe"]
    assert info.window_s == 4.0 and info.n_samples == len(st) and info.card_body["name"] == "physionet_mi"
    assert len(info.sources) == len(st.attrs["sources"]) and info.n_rejected == st.attrs["n_rejected"]
    assert info.tr is None and info.mesh is None and not info.frame_layout  # surface fields: absent
    assert info.get("sfreq") == 200.0 and info.get("mesh", "none") == "none"
    assert PatchDataset(lr_store).info == info


def test_surface_store_meta_is_typed(surface_root, tmp_path):
    runs = [
        SurfaceRun(surface_root / FSA5_L, "010188", run=r, label=0, frames=(lo, lo + 10))
        for r, lo in (("a", 0), ("b", 10))
    ]
    out = write_surface_store(
        tmp_path / "s.h5",
        runs,
        SurfaceRecipe(grid="ico2", tubelet=3),
        SurfaceStoreOptions(label_names=["left", "right"]),
        card="fsaverage5_rest",
    )
    info = PatchStore(out).info
    assert info.modality == "surface" and info.card == "fsaverage5_rest" and info.label_names == ("left", "right")
    assert info.grid == "ico6/ico2" and info.template == "ico6" and info.tubelet == 3 and info.frame_layout
    assert info.frames_per_sample == 3 and info.hemispheres == ("L",) and info.hemisphere == "L"
    assert info.mesh == "fsaverage5" and info.ch_names is None and info.sfreq is None
    assert info.has_tr == (info.onset_unit == "s") and (info.has_tr or math.isnan(info.tr))


def test_store_meta_from_attrs_checks_types_and_keeps_the_rest():
    info = StoreMeta.from_attrs(
        {
            "format": FORMAT,
            "complete": np.bool_(True),
            "ch_names": 'json:["Cz", "Pz"]',
            "sfreq": np.float64(200),
            "custom": 'json:{"a": 1}',
        }
    )
    assert info.complete is True and info.ch_names == ("Cz", "Pz") and info.sfreq == 200.0
    assert info.modality == "eeg" and info.extra == {"custom": {"a": 1}} and info.get("custom") == {"a": 1}
    with pytest.raises(StoreError, match=r"x\.h5: attribute 'ch_names' is 'Cz', expected a list"):
        StoreMeta.from_attrs({"ch_names": "Cz"}, where="x.h5")
    with pytest.raises(StoreError, match=r"x\.h5: attribute 'sfreq' is 'fast', expected float"):
        StoreMeta.from_attrs({"sfreq": "fast"}, where="x.h5")


def test_a_store_with_a_bad_attribute_is_refused_by_name(tmp_path):
    with PatchStoreWriter(tmp_path / "bad.h5", (1, 1, 200), attrs={"modality": "eeg", "label_names": "left"}) as w:
        w.append(np.zeros((1, 1, 1, 200)), np.zeros(1, dtype=np.int64))
    with pytest.raises(StoreError, match=r"bad\.h5: attribute 'label_names' is 'left', expected a list"):
        PatchStore(tmp_path / "bad.h5")


def test_raw_notes_round_trip_under_their_keys():
    raw = mne.io.RawArray(np.zeros((1, 10)), mne.create_info(["Cz"], 100.0, "eeg"), verbose="error")
    assert raw_notes(raw) == RawNotes() and raw_notes(raw).source_or() == "recording"
    raw.info["temp"] = {"other": 1}
    ren = ChannelRenames()
    notes = set_raw_notes(raw, source="a.edf", renames=ren, applied={"sfreq": 100.0})
    assert notes == raw_notes(raw) and notes.renames is ren and notes.source_or() == "a.edf"
    assert raw.info["temp"] == {
        "other": 1,
        "neurokit_source": "a.edf",
        "neurokit_renames": ren,
        "neurokit_applied": {"sfreq": 100.0},
    }
    raw_notes(raw).applied["x"] = 1  # a copy
    assert raw.info["temp"]["neurokit_applied"] == {"sfreq": 100.0}
    set_raw_notes(raw, source=None)
    assert "neurokit_source" not in raw.info["temp"] and raw.info["temp"]["other"] == 1
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['sauce'\]"):
        set_raw_notes(raw, sauce="x")


def test_options_of_each_modality():
    assert {"n_jobs", "scheduler", "channels", "stream_above_mb"} <= option_names("eeg")
    assert "n_jobs" not in option_names("surface") and {"mesh", "hemi", "spheres", "shards"} <= option_names("surface")
    shared, eeg = build_options("eeg", task="t", n_jobs=2, window_s=8.0, line_freq=0, encoding="latin1")
    assert shared == PrepareOptions(task="t", n_jobs=2) and isinstance(eeg, EEGOptions)
    assert eeg.recipe_overrides()["window_s"] == 8.0 and eeg.read_overrides() == {"encoding": "latin1"}
    shared, surf = build_options("surface", hemi="L", shards=True)
    assert shared.shards and surf == SurfaceOptions(hemi="L")
    with pytest.raises(ConfigError, match="modality surface: option\\(s\\) n_jobs do not apply"):
        build_options("surface", n_jobs=2)
    with pytest.raises(ConfigError, match="no preparer for modality 'meg'"):
        option_names("meg")
    with pytest.raises(ConfigError, match="stream_above_mb=-1: give a size in MiB"):
        EEGOptions(stream_above_mb=-1).stream_above_bytes()
    assert EEGOptions(stream_above_mb=1).stream_above_bytes() == 2**20


def test_write_surface_store_refuses_unknown_options(tmp_path):
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['sphere'\]"):
        write_surface_store(tmp_path / "s.h5", [], sphere={})


def test_card_recipe_of_each_modality():
    assert isinstance(load_card("physionet_mi").recipe(), EEGRecipe)
    card = load_card("fsaverage5_rest")
    rec = card.recipe()
    assert isinstance(rec, SurfaceRecipe) and rec == SurfaceRecipe.from_dict(
        {k: v for k, v in card.raw.get("preprocessing", {}).items() if k != "spheres"}
    )
    bad = DataCard(name="s", raw={**card.raw, "preprocessing": {"grid": "ico6/ico2", "tube": 3}})
    with pytest.raises(CardError, match=r"s: preprocessing block: unknown surface preprocessing key\(s\) \['tube'\]"):
        bad.recipe()
    sph = DataCard(name="s", raw={**card.raw, "preprocessing": {"spheres": {"L": "l.gii", "R": "r.gii"}}})
    assert sph.recipe() == SurfaceRecipe() and sph.spheres() == {"L": "l.gii", "R": "r.gii"}
    with pytest.raises(CardError, match="is a meg card"):
        DataCard(name="m", raw={"modality": "meg"}).recipe()


def test_eeg_job_is_one_record(eeg_root):
    path = eeg_root / "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"
    if not path.exists():
        pytest.skip(f"{path} not in the shared data")
    rec = EEGRecipe.from_dict({**load_card("physionet_mi").recipe().to_dict(), "events": {"T1": 0, "T2": 1}})
    job = EEGJob(str(path), rec.to_dict(), {})
    assert job[3] == job.member == "" and job.stream_above is None
    res = _eeg_job(job)
    assert "windows" in res and res["source"]["n_windows"] == len(res["windows"].labels) > 0
