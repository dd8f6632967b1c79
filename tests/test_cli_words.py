"""Issue 43: messages raised below the CLI name the Python parameter (``overwrite=True``, ``crop_start_s=-5``);
the CLI shows them with its flags (:func:`neurokit.cli.common.cli_words`), the running command's own option first,
then :data:`~neurokit.cli.common.PARAMETER_FLAGS` where the two names differ."""

import pytest
import typer.main
from typer.testing import CliRunner

from neurokit._utils.errors import ConfigError
from neurokit.cli import common
from neurokit.cli.main import app


def _run(*args):
    r = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "300"})
    return r.exit_code, " ".join(r.output.split())


@pytest.fixture
def running(monkeypatch):
    """Run :func:`cli_words` as if the command ``name`` were running."""

    def use(name: str) -> None:
        group = typer.main.get_command(app)
        monkeypatch.setattr(common.NeuroCommand, "running", group.commands[name])  # type: ignore[attr-defined]

    return use


def test_a_message_that_names_overwrite_shows_the_flag(tmp_path):
    from neurokit.stimuli.store import embed_stimuli

    (tmp_path / "movie.mp4").touch()
    (tmp_path / "stim.h5").touch()
    with pytest.raises(FileExistsError, match=r"stim.h5 exists; pass overwrite=True to replace it$"):
        embed_stimuli(tmp_path / "movie.mp4", tmp_path / "stim.h5")  # the Python API: the parameter
    code, out = _run("embed-stimuli", tmp_path / "movie.mp4", "-o", tmp_path / "stim.h5")
    assert code == 2 and out.endswith("stim.h5 exists; pass --overwrite to replace it"), out
    assert "overwrite=True" not in out


def test_a_parameter_of_another_name_is_shown_by_the_table(tmp_path):
    from neurokit.cards.recipes import EEGRecipe

    with pytest.raises(ConfigError, match=r"^crop_start_s=-5.0: give a number of seconds, 0 or more$"):
        EEGRecipe(crop_start_s=-5.0)
    code, out = _run("prepare", "physionet_mi", "-o", tmp_path / "x.h5", "--data-root", tmp_path, "--crop-start", "-5")
    assert code == 2 and "error: --crop-start -5.0: give a number of seconds, 0 or more" in out, out
    assert common.PARAMETER_FLAGS["crop_start_s"] == "--crop-start"


def test_cli_words_forms(running):
    running("prepare")
    words = common.cli_words
    assert words("pass overwrite=True to replace it") == "pass --overwrite to replace it"
    assert words("hemi='L' or hemi='R'") == "--hemi L or --hemi R"
    assert words("pass spheres= (a mesh of your own)") == "pass --sphere-l/--sphere-r (a mesh of your own)"
    assert words("stream_above_mb=-1: give a size") == "--stream-above -1: give a size"
    assert words("channels=: for BIDS") == "--channels: for BIDS"
    assert words("give all three (splits=)") == "give all three (--train-subjects/--val-subjects/--test-subjects)"
    assert words("no_such_name=3, max_iter=10") == "no_such_name=3, max_iter=10"  # not a parameter: as written
    assert words("[PosixPath('a.h5'), PosixPath('b.h5')]") == "a.h5, b.h5"
    running("finetune")
    assert words("pass allow_partial=True") == "pass --allow-partial-init"
    assert words("frozen=False") == "--no-frozen"  # a flag's off side
    assert words("label_fraction=0.5") == "--label-fractions 0.5"
    assert words("embed the stimuli with hop= equal to the TR") == "embed the stimuli with --hop equal to the TR"


def test_no_running_command_keeps_the_parameter_names_of_no_command(monkeypatch):
    monkeypatch.setattr(common.NeuroCommand, "running", None)
    assert common.cli_words("resume=True") == "--resume"  # an option of several commands, all spelled alike
    assert common.parameter_flag("not_an_option") is None


def test_every_table_entry_is_an_option_of_some_command():
    group = typer.main.get_command(app)
    opts = {o for cmd in group.commands.values() for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    for name, flags in common.PARAMETER_FLAGS.items():
        assert set(flags.split("/")) <= opts, name


def test_a_colon_after_a_value_is_not_part_of_it(running):
    running("finetune")
    assert common.cli_words("allow_partial=True: refused") == "--allow-partial-init: refused"
    assert common.cli_words("device=cuda:1 is not there") == "--device cuda:1 is not there"
