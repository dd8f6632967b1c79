from neurokit.cli.main import app

app(prog_name="neuro")
