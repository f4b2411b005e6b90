"""Issue 15, defect 9: results of a corrected engine never mix with earlier ones.

A RUN_DIR written under config version 1 (before the per-task seeding and the urbanground-v1
corrections) is not resumed into by the current engine: every job gets a new config hash, the
old rows stay under theirs, the run log names what changed, and ``summary`` asks for a config."""

from __future__ import annotations

import logging

from typer.testing import CliRunner

import urbanarena.runner.config as config_mod
from runner_util import write_inputs
from urbanarena.cli.main import app
from urbanarena.runner.config import CONFIG_VERSION_CHANGES, stale_config_note

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_an_old_run_dir_is_not_resumed_into(tmp_path, monkeypatch, caplog):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=4, n_tasks=3)
    out = tmp_path / "run"
    cmd = ["run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--seeds", 2, "--workers", 1,
           "--max-steps", 6, "--out", out]
    monkeypatch.setattr(config_mod, "CONFIG_VERSION", 1)  # the engine before issue 15
    r = invoke(*cmd)
    assert r.exit_code == 0 and "6 episodes run, 0 skipped" in r.stdout, r.output
    monkeypatch.undo()
    with caplog.at_level(logging.WARNING):
        r = invoke(*cmd)
    assert r.exit_code == 0 and "6 episodes run, 0 skipped" in r.stdout, r.output
    assert "6 stored episodes of config" in caplog.text and "not resumed" in caplog.text
    assert "(seed, task id)" in caplog.text
    r = invoke("summary", out, "--json")
    assert r.exit_code == 2 and "holds 2 configs" in r.stderr and "older engine: config_version 1" in r.stderr


def test_stale_note_names_every_change_since():
    assert stale_config_note({"config_version": config_mod.CONFIG_VERSION}) is None
    note = stale_config_note({})  # stores written before the field existed count as version 1
    assert note is not None and all(CONFIG_VERSION_CHANGES[v] in note for v in CONFIG_VERSION_CHANGES)
