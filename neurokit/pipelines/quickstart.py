"""``neuro quickstart``: prepare → pretrain CBraMod on the training windows (each store with its channels) → fine-tune several tasks, each
scored beside the classical baselines and chance.

Pretraining sees only the *training* recordings of the downstream tasks (never their validation or
test subjects/segments), each store with its own channels: CBraMod's weights do not depend on the montage, so the
single-channel Bonn windows and the multi-channel EEGMMIDB windows train side by side, one layout per batch
(:func:`neurokit.data.selection.select_layouts`), and the spatial attention sees the channels it is for.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from neurokit.store.patch_store import PatchStore, PatchStoreWriter

logger = logging.getLogger("neurokit")

#: (card, task, channel set, fine-tuning epochs): Bonn seizure detection (a clear signal) and
#: EEGMMIDB left- vs right-fist imagery across subjects (the hard case)
TASKS = (
    ("bonn_epilepsy", "seizure", None, 2),
    ("physionet_mi", "left_right_imagery", "sensorimotor", 3),
)


def pool_single_channel(
    stores: list[tuple[PatchStore, list[str]]], out: Path, *, n_patches: int = 4, max_samples: int = 3000, seed: int = 0
) -> Path:
    """Write the training-subject windows of ``stores`` (``(store, train subjects)`` pairs) as one
    unlabelled store of single-channel samples ``(1, n_patches, 200)``, at most ``max_samples`` drawn
    at random (seeded). Stores with fewer than ``n_patches`` patches per window are skipped.

    A sample's subject is ``"<store stem>:<subject>"``. The pooled store records, as ``sources``, the original
    recordings (path, SHA-256, archive member) of the subjects it took windows from, under those pooled subject
    ids (so a pretraining checkpoint names the recordings it saw: :func:`neurokit.data.provenance.used_sources`);
    ``pooled_stores``: the store paths; ``pooled_from``: per store, the windows its preparation kept and rejected
    for the training subjects, and its amplitude threshold (:func:`neurokit.data.provenance.kept_summary`).
    """
    rng = np.random.default_rng(seed)
    rows = []  # (store index, sample index, channel)
    for si, (st, train) in enumerate(stores):
        if st.sample_shape[1] < n_patches:
            continue
        idx = np.flatnonzero(np.isin(st.meta["subject"].astype(str), train))
        rows += [(si, int(i), c) for i in idx for c in range(st.sample_shape[0])]
    pick = sorted(rng.choice(len(rows), size=min(max_samples, len(rows)), replace=False))
    pooled_subjects = {(rows[k][0], str(stores[rows[k][0]][0].meta["subject"][rows[k][1]])) for k in pick}
    sources, pooled_from = [], []
    for si, (st, train) in enumerate(stores):
        stem, train_ids = Path(st.path).stem, {str(t) for t in train}
        srcs = [x for x in st.info.sources if isinstance(x, dict)]
        for x in srcs:  # a source of no recorded subject (an older store) may have given any window: kept
            if x.get("subject") in (None, "") or (si, str(x["subject"])) in pooled_subjects:
                src = {k: v for k, v in x.items() if k not in ("session", "run")}  # pooled samples have neither
                sources.append({**src, **({"subject": f"{stem}:{x['subject']}"} if x.get("subject") else {})})
        mine = [x for x in srcs if str(x.get("subject")) in train_ids]
        kept = sum(int(x.get("n_windows") or 0) for x in mine) if mine else len(st)
        rej = sum(int(x.get("n_rejected") or 0) for x in mine) if mine else int(st.info.n_rejected or 0)
        pooled_from.append(
            {"store": str(st.path), "kept": kept, "rejected": rej, "reject_uv": (st.info.recipe or {}).get("reject_uv")}
        )
    with PatchStoreWriter(
        out,
        (1, n_patches, 200),
        overwrite=True,
        attrs=dict(
            modality="eeg",
            card="pooled",
            task="pretrain",
            ch_names=["any"],
            sfreq=200.0,
            sources=sources,
            pooled_stores=[str(st.path) for st, _ in stores],
            pooled_from=pooled_from,
            units="100 uV",
        ),
    ) as w:
        from neurokit._utils.progress import progress_bar

        for si, i, c in progress_bar((rows[k] for k in pick), description="pool training windows", total=len(pick)):
            st = stores[si][0]
            w.append(
                st.patches(i)[c : c + 1, :n_patches][None], subject=f"{Path(st.path).stem}:{st.meta['subject'][i]}"
            )
    return out


#: card → how many times each pretraining epoch goes through that store's training windows
#: (``PretrainConfig.layout_repeats``): EEGMMIDB's 225 multi-channel windows give 7 batches an epoch beside Bonn's 42,
#: too few steps for the model to learn from the other channels (measured in docs/guide/pretraining.md)
PRETRAIN_REPEATS = {"physionet_mi": 8}

#: label fractions of the quick start's comparison: where pretraining can show (few labels) and all labels
FRACTIONS = (0.02, 0.1, 1.0)

#: CPU seconds of the default quick start (README: 350 s, 2026-12-04, 2 lightly loaded cores); the stage times of
#: any run are printed at its end
CPU_SECONDS = 350
#: wall seconds of each stage of the default quick start as measured then (README)
STAGE_SECONDS = {"prepare": 4, "pretrain": 33, "compare bonn_epilepsy": 76, "compare physionet_mi": 77}


def stage_plan(*, seeds: int, label_fractions: tuple[float, ...], pretrain_epochs: int, default: bool) -> list[str]:
    """What the quick start will do and how long it takes, said at its start (a log shows where it stands).

    Examples
    --------
    >>> print(stage_plan(seeds=3, label_fractions=FRACTIONS, pretrain_epochs=3, default=True)[0])
    stages: prepare 2 stores; pretrain CBraMod on their training windows, each with its channels (3 epochs); compare, per task, 45 fine-tuning runs (5 arms × 3 seeds × 3 label fractions)
    """
    n_runs = 5 * seeds * len(label_fractions)  # pretrained, scratch, EEGNet, two linear probes
    when = (
        f"the default settings take about {CPU_SECONDS} s of CPU time in all (the README's figure)"
        if default
        else f"the default settings take about {CPU_SECONDS} s of CPU time; these settings differ"
    )
    return [
        f"stages: prepare {len(TASKS)} stores; pretrain CBraMod on their training windows, each with its channels "
        f"({pretrain_epochs} epochs); compare, per task, {n_runs} fine-tuning runs (5 arms × {seeds} seeds × "
        f"{len(label_fractions)} "
        "label fractions)",
        f"{when}; several times that on a busy machine. Off a terminal each stage prints a line at least every "
        "30 s with the time it has left",
        f"stage times as measured (2026-12-04, 2 lightly loaded cores, {sum(STAGE_SECONDS.values()):,} s in "
        "all): " + ", ".join(f"{k} {v:,} s" for k, v in STAGE_SECONDS.items()),
    ]


class _StageClock:
    """Wall seconds per stage of one run, in order (``tick(name)`` ends the stage ``name``)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def tick(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.t, 1)
        self.t = now


def run_quickstart(
    data_root: Path,
    out: Path,
    *,
    pretrain_epochs: int = 3,
    finetune_epochs: int | None = None,
    n_layers: int = 2,
    channels: str = "sensorimotor",
    batch_size: int = 32,
    seed: int = 0,
    seeds: int = 3,
    label_fractions: tuple[float, ...] = FRACTIONS,
    max_pool: int = 8000,
    device: str = "auto",
    overwrite: bool = False,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the quick start: prepare, pretrain on the pooled training windows, then compare pretrained and
    from-scratch fine-tuning of each task over ``seeds`` seeds at each of ``label_fractions``.

    Parameters
    ----------
    data_root : Path
        Folder holding ``bonn/`` and ``MNE-eegbci-data/`` (``../shared/data/eeg``).
    out : Path
        Output folder; stores and runs in it that match the settings are reused.
    pretrain_epochs, finetune_epochs : int
        Pretraining epochs; fine-tuning epochs of every task (default each task's in :data:`TASKS`).
    n_layers, batch_size, seed : int
        CBraMod layers, batch size of both stages, first seed.
    seeds : int
        Seeds of every comparison arm (``seed … seed + seeds − 1``).
    label_fractions : tuple of float
        Fractions of the training labels each arm is fine-tuned on (:data:`FRACTIONS`).
    max_pool : int
        Most windows of each store pretrained on (drawn at random, seeded).
    channels : str
        The EEGMMIDB channel set.

    Returns
    -------
    dict
        ``{"tasks": {card:task: comparison (neurokit.pipelines.compare.compare_pretraining)}, "pretrain":
        pretraining summary, "seconds": wall time, "stage_seconds": {stage: wall seconds}}`` (stages ``prepare``,
        ``pretrain``, ``compare CARD`` per task).

    Examples
    --------
    >>> res = run_quickstart(Path("../shared/data/eeg"), Path("runs/quickstart"))  # doctest: +SKIP
    >>> res["tasks"]["bonn_epilepsy:seizure"]["differences"]["pretrained − scratch"]  # doctest: +SKIP
    """
    from neurokit.pipelines.compare import compare_pretraining
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.prepare import prepare_or_reuse
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain_or_resume

    t0 = time.perf_counter()
    default = (pretrain_epochs, seeds, tuple(label_fractions), n_layers, batch_size) == (3, 3, FRACTIONS, 2, 32)
    for line in stage_plan(
        seeds=seeds, label_fractions=label_fractions, pretrain_epochs=pretrain_epochs, default=default
    ):
        say(line)
    clock = _StageClock()
    out.mkdir(parents=True, exist_ok=True)
    stores = {}
    for card, task, chans, _ in TASKS:
        chans = channels if chans else None
        path = out / f"{card}_{task}{'_' + chans.replace(',', '-') if chans else ''}.h5"
        path, note = prepare_or_reuse(card, path, data_root=data_root, task=task, channels=chans, overwrite=overwrite)
        say(note)  # a store is reused only when it holds what prepare would write now
        stores[(card, task)] = PatchStore(path)
    clock.tick("prepare")
    from neurokit.evaluation.masked import heldout_lines

    say("pretraining on the training recordings only, each store with its own channels (one layout per batch)")
    pt = pretrain_or_resume(
        [st.path for st in stores.values()],
        out / "pretrain",
        PretrainConfig(
            model_kwargs={"n_layers": n_layers},
            epochs=pretrain_epochs,
            batch_size=batch_size,
            # a short run: the cosine over its few steps decays the rate before the model has learned (measured in
            # docs/guide/pretraining.md); the release's cosine spans 40 epochs, nearly constant over a short run
            optim=dict(schedule="constant"),
            seed=seed,
            device=device,
            max_windows=max_pool,
            layout_repeats={
                st.path.name: PRETRAIN_REPEATS[card] for (card, _), st in stores.items() if card in PRETRAIN_REPEATS
            },
        ),
        overwrite=overwrite,
    )
    clock.tick("pretrain")
    say(f"pretrained on {pt['data']}; held out: {pt['heldout']}")
    say(
        f"pretrain loss {pt['loss_first']:.4f} → {pt['loss_last']:.4f} over {pt['steps']} steps"
        + ("" if pt.get("steps_run", 1) else " (reused: the run in OUT was complete)")
    )
    for h in (pt.get("heldout_history") or [])[-1:]:  # did it learn more than the scale, and than a linear fit?
        pooled, *per_layout = heldout_lines(h)
        say(f"{pooled} (input normalisation: {pt['normalize']['mode']})")
        for line in per_layout:  # each layout beside its own predict-zero: Bonn's would hide the multi-channel one
            say(line)
    results = {}
    for card, task, _, epochs in TASKS:
        cfg = FinetuneConfig(
            epochs=finetune_epochs or epochs,
            batch_size=batch_size,
            seed=seed,
            device=device,
            head="avgpool",
            lr_backbone=5e-4,
            lr_head=1e-3,
            progress=False,
        )
        say(
            f"{card}:{task}: pretrained vs from scratch, {seeds} seed(s) × label fractions "
            f"{', '.join(f'{f:g}' for f in label_fractions)}"
        )
        results[f"{card}:{task}"] = compare_pretraining(
            [stores[(card, task)].path],
            out / f"compare_{card}_{task}",
            cfg,
            init=pt["checkpoint"],
            seeds=seeds,
            label_fractions=label_fractions,
            overwrite=overwrite,
            show_progress=True,
        )
        clock.tick(f"compare {card}")
    return {"tasks": results, "pretrain": pt, "seconds": time.perf_counter() - t0, "stage_seconds": clock.seconds}
