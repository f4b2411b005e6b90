"""The ``urbanarena`` command line (typer)."""
