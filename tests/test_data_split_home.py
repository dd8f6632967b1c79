"""A store's split has one home (``neurokit.data.splits.resolve_splits``): every consumer reads the same membership.

(a) A card that splits by recording (``split_unit: run``, as BCI Competition 2020 track 3: every subject in train,
val and test) pretrains with default options, through the Python API and the CLI, on the train recordings only:
the val and test recordings stay unseen (before, pretraining recomputed the split by subject and stopped).
(b) For every card in ``data_cards/`` whose tasks declare splits (fixed subjects or ranges, recordings, trial
indices, or a ``split_rule`` resolved over synthetic file listings), a synthetic store of the card's declared ids
gets the same members in each part from the resolver, ``split_counts`` (prepare's split line), pretraining's
selection, ``PatchDataset.split``, the baselines, the confound check, the ``card`` evaluation scheme, and, in a one-epoch
fine-tuning run, fine-tuning's parts and the evaluation of its checkpoint.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cards import list_cards, load_card
from neurokit.data.dataset import PatchDataset
from neurokit.data.selection import select_layouts, select_pretrain_data
from neurokit.data.splits import SPLITS, card_splits, resolve_splits, split_counts
from neurokit.io.entry import FileEntry
from neurokit.store.patch_store import PatchStore, PatchStoreWriter

pytestmark = pytest.mark.usefixtures("two_torch_threads")

CH = ["Fp1", "Fp2"]  # frontal channels: the confound check has its eye-movement proxies


class _Seen(Exception):
    """Raised by a replaced step once it has recorded what it was given."""


def _write(path, body: dict, task: str, pairs: list[tuple[str, str]], *, regression: bool = False, n: int = 2):
    """A store of ``n`` windows ``(2, 1, 200)`` per (subject, run) of ``pairs``, recording the card ``body``; labels
    alternate 0, 1 over the whole store (or take values in [0.2, 0.8] for a regression task)."""
    rng = np.random.default_rng(0)
    classes = list((body.get("tasks") or {}).get(task, {}).get("classes") or [])
    attrs = dict(modality="eeg", card=body["name"], task=task, card_body=body, label_names=classes, ch_names=CH,
                 sfreq=200.0)  # fmt: skip
    k = 0
    with PatchStoreWriter(path, (2, 1, 200), attrs=attrs, label_dtype="float32" if regression else "int64") as w:
        for subject, run in pairs:
            i = np.arange(k, k + n)
            y = (0.2 + 0.6 * (i % 7) / 6).astype(np.float32) if regression else i % 2
            x = rng.normal(size=(n, 2, 1, 200)).astype(np.float32)
            w.append(x, y, subject=subject, session="1", run=run, onset=np.arange(n) * 1.0)
            k += n
    return path


# ---------------------------------------------------------------------------------------------------------- (a)


def _bcic_like(path):
    """Three subjects, each with recordings ``train`` (4 windows), ``val`` (2) and ``test`` (2), under the packaged
    BCIC2020-3 card (``split_unit: run``)."""
    card = load_card("bcic2020_3")
    subjects = [f"Data_Sample{s:02d}" for s in (1, 2, 3)]
    rng = np.random.default_rng(1)
    attrs = dict(modality="eeg", card=card.name, task="imagined_speech", card_body=card.raw, ch_names=CH,
                 sfreq=200.0, label_names=card.classes("imagined_speech"))  # fmt: skip
    with PatchStoreWriter(path, (2, 2, 200), attrs=attrs) as w:
        for s in subjects:
            for run, n in (("train", 4), ("val", 2), ("test", 2)):
                x = rng.normal(size=(n, 2, 2, 200)).astype(np.float32)
                w.append(x, np.arange(n) % 5, subject=s, session="1", run=run, onset=np.arange(n) * 3.0)
    return path, subjects


def test_a_run_split_card_pretrains_on_its_train_recordings(tmp_path):
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    store, subjects = _bcic_like(tmp_path / "bcic.h5")
    runs = PatchStore(store).meta["run"].astype(str)
    # the selection: the train recordings of every subject; the val and test recordings stay unseen
    ds, phrase = select_pretrain_data([store])
    assert len(ds) == 12 and set(ds.meta("run").astype(str)) == {"train"}
    assert sorted(set(ds.meta("subject").astype(str))) == subjects
    assert set(ds.sample_ids) == set(np.flatnonzero(runs == "train"))
    assert (
        phrase
        == "12 samples of the train split (runs train; the others stay unseen; split='all' to use every recording)"
    )
    for k, n in (("val", 6), ("test", 6)):
        part, _ = select_pretrain_data([store], split=k)
        assert len(part) == n and set(part.meta("run").astype(str)) == {k}
    # the Python API with default options (a tiny model): trains on the 12 train windows, holds out some of them
    cfg = PretrainConfig(model_kwargs={"n_layers": 1}, epochs=1, batch_size=4, device="cpu", progress=False)
    res = pretrain(store, tmp_path / "pt", cfg)
    assert res["data"] == phrase and res["subjects"] == subjects
    assert res["heldout"].startswith("1 windows (1 of 12 windows of bcic.h5")  # round(0.1 × 12): < 5 subjects
    # the CLI, default options
    from neurokit.cli.main import app

    out = tmp_path / "pt_cli"
    args = ["pretrain", str(store), "-o", str(out), "--epochs", "1", "--batch-size", "4", "--n-layers", "1",
            "--device", "cpu", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    said = " ".join(r.output.split())
    assert "pretraining on 12 samples of the train split (runs train; the others stay unseen; --split all" in said
    summary = json.loads((out / "pretrain_summary.json").read_text())
    assert summary["data"] == phrase and summary["subjects"] == subjects
    # split='all' trains on every recording
    ((every, why),) = select_layouts([store], split="all")
    assert len(every) == 24 and why.endswith("split='all')")


def test_a_one_subject_run_card_store_pretrains_on_the_card_runs(tmp_path):
    """One subject with every recording of the card: the card's runs (not the last-two-runs rule)."""
    card = load_card("bcic2020_3")
    store = _write(tmp_path / "one.h5", card.raw, "imagined_speech", [("Data_Sample01", r) for r in SPLITS])
    how, parts = resolve_splits(PatchDataset(store))
    assert how == "run" and parts == {k: {"runs": [k]} for k in SPLITS}
    ds, _ = select_pretrain_data([store])
    assert set(ds.meta("run").astype(str)) == {"train"}


def test_a_partial_run_card_store_pretrains_on_what_it_holds(tmp_path):
    """Two subjects and the train recordings only: pretraining takes them; fine-tuning says what is missing."""
    from neurokit._utils.errors import ConfigError

    card = load_card("bcic2020_3")
    store = _write(tmp_path / "part.h5", card.raw, "imagined_speech", [("A", "train"), ("B", "train")])
    ds, _ = select_pretrain_data([store])
    assert len(ds) == 4
    with pytest.raises(
        ConfigError, match="none of the store's runs \\(train\\) is in the card's 'val' split \\(val\\)"
    ):
        select_pretrain_data([store], split="val")
    with pytest.raises(ConfigError, match="split 'val' of card 'bcic2020_3' has no run in the store"):
        resolve_splits(PatchDataset(store))
    assert split_counts(PatchDataset(store)) == {"train": 4, "val": 0, "test": 0}


# ---------------------------------------------------------------------------------------------------------- (b)


def _rule_entries(rule: dict) -> list[FileEntry]:
    """A synthetic listing for a ``split_rule``: for ``sorted_subjects``, 5 subjects per group folder of ``train/``
    and 2 in ``eval/``; for ``sorted_files``, 3 files per subject and enough files in each group to reach its test
    part (cuts between a subject's files put it in two splits, as Mumtaz's do: the split is then by recording)."""
    out = []
    if rule["rule"] == "sorted_subjects":
        for g in rule.get("groups") or [""]:
            for i in range(7):
                s = f"{g[:2] or 'p'}{i:02d}"
                folder = "train" if i < 5 else rule.get("test", "eval")
                path = "/".join(x for x in (folder, g, f"{s}_t0.edf") if x)
                out.append(FileEntry(path=path, subject=s, run=f"{s}_t0"))
        return out
    for prefix, (_, val_end) in rule["groups"].items():
        p = prefix or "Z"
        for i in range((val_end + 4) // 3 + 1):
            for c in ("EC", "EO", "TASK"):
                out.append(FileEntry(path=f"{p} S{i:02d} {c}.edf", subject=f"{p} S{i:02d}", run=f"{p} S{i:02d} {c}"))
    return out


def _card_tasks():
    """(card, task) of every packaged card task that declares splits or a split rule."""
    out = []
    for name in list_cards():
        card = load_card(name)
        for task, t in card.tasks.items():
            if t.get("splits") or t.get("split_rule"):
                out.append((name, task))
    return out


CARD_TASKS = _card_tasks()
#: one card task per way a card can split (by recording, by trial, by file rule, a regression's rule, by patients of
#: class folders, subject ranges, subject lists): each fine-tuned once (the other consumers check every task)
FINETUNED = [
    t
    for t in CARD_TASKS
    if t
    in {
        ("bcic2020_3", "imagined_speech"),
        ("seed_v", "emotion"),
        ("mumtaz", "mdd"),
        ("seed_vig", "vigilance"),
        ("tuab", "abnormal"),
        ("bonn_epilepsy", "seizure"),
        ("physionet_mi", "left_right_imagery"),
    }
]


def _card_store(tmp_path, name: str, task: str):
    """The store of a card task's declared ids (a rule resolved over a synthetic listing), with what the card
    declares: ``(path, unit, declared)``."""
    card = load_card(name)
    t = card.tasks[task]
    if t.get("split_rule"):
        entries = _rule_entries(t["split_rule"])
        card.apply_split_rule(task, entries)
        pairs = [(e.subject, e.run) for e in entries]
    unit, declared = card_splits(card, task)
    if not t.get("split_rule"):
        ids = [x for k in SPLITS for x in declared[k]]
        if unit == "subject":
            pairs = [(s, "r1") for s in ids]
        else:  # recordings (or trial indices) of three subjects, each in every split
            pairs = [(s, r) for s in ("s1", "s2", "s3") for r in ids]
    regression = t.get("kind") == "regression"
    path = _write(
        tmp_path / f"{name}_{task}.h5", card.raw, task, pairs, regression=regression, n=1 if len(pairs) >= 20 else 2
    )
    return path, unit, declared


def test_every_packaged_card_with_splits_is_covered():
    names = {n for n, _ in CARD_TASKS}
    assert {"bcic2020_3", "seed_v", "mumtaz", "seed_vig", "tuab", "tuev", "physionet_mi", "smni_alcoholism"} <= names
    assert len(CARD_TASKS) >= 15


@pytest.mark.parametrize("name,task", CARD_TASKS, ids=[f"{n}:{t}" for n, t in CARD_TASKS])
def test_every_consumer_reads_the_same_split(tmp_path, monkeypatch, name, task):
    from neurokit.evaluation import baselines as baselines_mod
    from neurokit.evaluation import confounds as confounds_mod
    from neurokit.evaluation.schemes import make_folds

    path, unit, declared = _card_store(tmp_path, name, task)
    st = PatchStore(path)
    col = st.meta[unit].astype(str)
    # what the card declares, independently of the resolver: each part's samples are those of its ids
    want = {k: set(np.flatnonzero(np.isin(col, declared[k])).tolist()) for k in SPLITS}
    assert all(want.values()) and not (want["train"] & (want["val"] | want["test"]))
    ds_all = PatchDataset(path)
    how, parts = resolve_splits(ds_all)
    key = "subjects" if unit == "subject" else "runs"
    assert how == unit and parts == {k: {key: declared[k]} for k in SPLITS}

    def members(ds) -> set:
        return set(np.asarray(ds.sample_ids).tolist())

    assert {k: members(PatchDataset(path, labelled=True, **parts[k])) for k in SPLITS} == want
    # prepare's split line
    assert split_counts(ds_all) == {k: len(want[k]) for k in SPLITS}
    # pretraining's selection of each part
    for k in SPLITS:
        assert members(select_pretrain_data([path], split=k)[0]) == want[k], k
    # the dataset's own split (fine-tuning's parts, checked for leaks)
    assert {k: members(d) for k, d in ds_all.split().items()} == want
    # the baselines' parts (the fitting replaced by a record of what it was given)
    seen = {}

    def record(parts_, kind, **kw):
        seen.update({k: members(d) for k, d in parts_.items()})
        return {}

    monkeypatch.setattr(baselines_mod, "run_baselines", record)
    res = baselines_mod.baseline(path, band=None)
    assert seen == want and res["split_by"] == unit
    # the confound check's part (its reading of the proxy channels replaced by a record of the samples it reads)
    if not res["kind"] == "regression":  # a regression target is not checked

        def grab(ds, proxies):
            seen["confounds"] = members(ds)
            raise _Seen

        monkeypatch.setattr(confounds_mod, "_proxy_windows", grab)
        for k in SPLITS:
            with pytest.raises(_Seen):
                confounds_mod.check_confounds(path, k)
            assert seen["confounds"] == want[k], k
    # the card scheme's one fold
    (fold,) = make_folds(PatchDataset(path, labelled=True), "card", card_splits=resolve_splits(ds_all)[1])
    assert {k: members(PatchDataset(path, labelled=True, **v)) for k, v in fold.splits.items()} == want


@pytest.mark.slow
@pytest.mark.parametrize("name,task", FINETUNED, ids=[f"{n}:{t}" for n, t in FINETUNED])
def test_finetuning_and_evaluation_read_the_same_split(tmp_path, name, task):
    """A one-epoch fine-tuning run of a 1-layer model on a card's store, one card per way of splitting: its parts,
    its test predictions and the checkpoint's evaluation are the card's."""
    from neurokit.pipelines.evaluate import evaluate
    from neurokit.pipelines.finetune import finetune
    from neurokit.training.config import FinetuneConfig

    path, unit, declared = _card_store(tmp_path, name, task)
    col = PatchStore(path).meta[unit].astype(str)
    want = {k: sorted(np.flatnonzero(np.isin(col, declared[k])).tolist()) for k in SPLITS}
    cfg = FinetuneConfig(epochs=1, batch_size=32, model_kwargs={"n_layers": 1}, head="avgpool", device="cpu",
                         progress=False, baselines=False, confound_check=False)  # fmt: skip
    rep = finetune(path, tmp_path / "ft", cfg)
    key = "subjects" if unit == "subject" else "runs"
    assert rep["split_by"] == unit and rep["splits"] == {k: {key: declared[k]} for k in SPLITS}
    assert rep["n_samples"] == {k: len(v) for k, v in want.items()}
    pred = np.load(tmp_path / "ft" / "predictions.npz")
    assert sorted(pred["sample"].tolist()) == want["test"]
    res = evaluate(tmp_path / "ft" / "best.pt", path, device="cpu")
    assert res["n_samples"] == len(want["test"]) and res[f"{unit}s"] == sorted(set(col[want["test"]]))


def test_a_subject_in_val_and_test_is_warned_once_by_name(tmp_path, caplog):
    """Issue 44 item 10: a subject shared by validation and test was warned twice, once as ``[('aaaaaaac',)]``."""
    from neurokit.data.splits import check_no_leak

    body = {"name": "own", "tasks": {"t": {"classes": ["a", "b"]}}}
    path = _write(tmp_path / "s.h5", body, "t", [("s1", "r1"), ("s2", "r1"), ("s3", "r1")], n=4)
    ds = PatchDataset(path)
    with caplog.at_level("WARNING", logger="neurokit"):
        _, kw = resolve_splits(ds, {"train": ["s1"], "val": ["s2"], "test": ["s2", "s3"]})
        check_no_leak(ds, kw, "subject")
    said = [r.getMessage() for r in caplog.records if "in both 'val' and 'test'" in r.getMessage()]
    assert said == ["subjects ['s2'] are in both 'val' and 'test': model selection sees the test data"]
