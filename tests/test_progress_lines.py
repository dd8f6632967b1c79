"""Issue 28 item 5: progress a person can follow when the output is not a terminal (a log, a pipe): a line when a
stage starts, at least every interval while it runs (even inside one long item) and when it ends, each with
done / total, the elapsed time and the estimated time left."""

import io
import re
import time

from typer.testing import CliRunner

from neurokit._utils import progress


def test_plain_lines_say_done_total_elapsed_and_left_with_a_fake_clock():
    now = [100.0]
    buf = io.StringIO()
    p = progress.PlainProgress("compare lr", 12, interval=3600, clock=lambda: now[0], stream=buf)
    assert p.line() == "compare lr: 0/12 (0 %), elapsed 0:00:00, time left unknown"
    now[0] += 90.0
    p.advance()
    p.advance(2)
    assert p.line() == "compare lr: 3/12 (25 %), elapsed 0:01:30, about 0:04:30 left"  # 30 s per item × 9
    now[0] += 3600.0
    p.advance(9, info="loss=0.25")
    p.close()
    lines = buf.getvalue().splitlines()
    assert lines == [
        "compare lr: 0/12 (0 %), elapsed 0:00:00, time left unknown",
        "compare lr: 12/12 (100 %) loss=0.25, elapsed 1:01:30, done",
    ]
    # a resumed run: the steps done before do not count in the rate
    now[0] = 0.0
    r = progress.PlainProgress("pretrain", 100, start=50, interval=3600, clock=lambda: now[0], stream=io.StringIO())
    now[0] = 10.0
    r.advance(10)
    assert r.line().endswith("60/100 (60 %), elapsed 0:00:10, about 0:00:40 left")
    r.close()


def test_a_line_comes_while_one_long_item_runs(capsys, monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 0.05, raising=False)
    seen_during_first = None
    for i in progress.progress_bar(range(2), description="stage"):
        if i == 0:
            time.sleep(0.4)  # one long item: 8 intervals
            seen_during_first = capsys.readouterr().err
    out = seen_during_first.splitlines()
    assert len(out) >= 4, out  # the start line and the ticks, before the item ended
    assert all(re.fullmatch(r"stage: 0/2 \(0 %\), elapsed 0:00:00, time left unknown", line) for line in out), out
    last = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(r"stage: 2/2 \(100 %\), elapsed 0:00:0\d, done", last), last


def test_train_progress_off_a_terminal_writes_lines(capsys, monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 3600.0, raising=False)
    bar = progress.TrainProgress(4, description="pretrain CBraMod")
    for k in range(4):
        bar.update(loss=1.0 / (k + 1))
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "pretrain CBraMod: 0/4 (0 %), elapsed 0:00:00, time left unknown"
    assert re.fullmatch(r"pretrain CBraMod: 4/4 \(100 %\) loss=0\.25, elapsed 0:00:00, done", lines[-1]), lines


def test_neuro_prepare_to_a_log_prints_progress_lines(eeg_root, tmp_path):
    from neurokit.cli.main import app

    args = ["prepare", "physionet_mi", "-o", str(tmp_path / "s.h5"), "--data-root", str(eeg_root)]
    r = CliRunner().invoke(app, [*args, "--task", "left_right_imagery", "--subjects", "1", "--channels", "C3,Cz,C4"])
    assert r.exit_code == 0, r.output
    lines = [line for line in r.output.splitlines() if line.startswith("prepare physionet_mi:")]
    assert lines[0].startswith("prepare physionet_mi: 0/")
    n = re.match(r"prepare physionet_mi: 0/(\d+)", lines[0]).group(1)
    assert re.fullmatch(rf"prepare physionet_mi: {n}/{n} \(100 %\), elapsed \d:\d\d:\d\d, done", lines[-1]), lines


def test_progress_goes_to_standard_error_so_piped_results_stay_clean(capsys, monkeypatch):
    """Issue 44 item 11: progress lines appeared in piped output (standard output): they go to standard error."""
    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 3600.0, raising=False)
    for _ in progress.progress_bar(range(3), description="stage"):
        print("result")
    got = capsys.readouterr()
    assert got.out.splitlines() == ["result"] * 3
    assert got.err.splitlines()[-1].startswith("stage: 3/3 (100 %)")


def test_evaluate_has_no_progress_and_a_progress_bar(capsys):
    """Issue 44 item 11: ``neuro evaluate`` had no ``--no-progress`` (``neuro finetune`` has it)."""
    import typer.main

    from neurokit.cli.main import app

    cmd = typer.main.get_command(app).commands["evaluate"]
    opts = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    assert {"--progress", "--no-progress"} <= opts
    import numpy as np
    import torch

    from neurokit.training.predict import predict

    ds = torch.utils.data.TensorDataset(torch.ones(5, 2), torch.arange(5))
    y, _ = predict(torch.nn.Linear(2, 1), ds, 2, torch.device("cpu"), progress=True)
    assert y.tolist() == [0, 1, 2, 3, 4] and np.isfinite(_).all()
    assert capsys.readouterr().err.splitlines()[-1].startswith("predict: 3/3 (100 %)")
