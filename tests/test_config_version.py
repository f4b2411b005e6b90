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


# the protocols' parameters before issue 25 (src/urbanarena/env/protocols.py at 9387cb1^), written out
PARAMS_BEFORE_ISSUE_25 = {
    "cityarena-v1": {
        "action_set": "arena", "step_limit": 50, "stagnation_limit": 20, "stagnation_epsilon_m": 0.05,
        "away_from_goal_limit": 5, "away_from_goal_epsilon_m": 0.05, "away_from_goal_distance": "euclidean",
        "away_from_goal_counts": "requests", "away_from_goal_scope": ["map_navigation"], "branch_rule": "nearest",
        "recent_actions_window": 5, "parse_failure": "re-request", "max_reasks": 3,
        "generation": {"temperature": 1.0, "max_output_tokens": 8192}, "coordinate_radius_m": 10.0,
        "map_navigation_radius_m": 20.0, "location_map": "except-localization", "image_downscale_step": 0.85,
        "reply_reading": "reference"},
    "urbanarena-v1": {
        "action_set": "arena", "step_limit": 50, "stagnation_limit": 20, "stagnation_epsilon_m": 0.05,
        "away_from_goal_limit": 5, "away_from_goal_epsilon_m": 0.05, "away_from_goal_distance": "graph",
        "away_from_goal_counts": "moves", "away_from_goal_scope": ["map_navigation"], "branch_rule": "half-plane",
        "recent_actions_window": 5, "parse_failure": "corrective-re-ask", "max_reasks": 2,
        "generation": {"temperature": 1.0, "max_output_tokens": 8192}, "coordinate_radius_m": 10.0,
        "map_navigation_radius_m": 20.0, "location_map": "task-flag"},
    "urbanground-v1": {"action_set": "urbanground", "arrival_radius_m": 15.0, "pna_buffer_m": 3.0, "contact_m": 0.5},
}


def test_issue_25_changes_the_hashes_of_cityarena_v1_and_urbanground_v1_only(monkeypatch):
    """Issue 25's acceptance: stored results whose meaning changed get new config hashes. cityarena-v1
    (items 1-3: stop timing, answer reading) and urbanground-v1 (item 5: the reference agent inputs) changed
    through protocol parameters, so their hashes change by themselves (docs/protocols.md lists it);
    urbanarena-v1 did not change and keeps its hashes."""
    import dataclasses

    from urbanarena.env.protocols import get_protocol
    from urbanarena.runner.config import EpisodeConfig

    def hashes(pid):
        cfg = EpisodeConfig(protocol_id=pid, max_steps=50, agent_name="random", agent_config={"name": "random"},
                            family="cityarena", city_hash="c" * 64)
        now = cfg.hash
        with monkeypatch.context() as m:
            m.setattr(config_mod, "get_protocol",
                      lambda p: dataclasses.replace(get_protocol(p), params=PARAMS_BEFORE_ISSUE_25[p]))
            before = cfg.hash
        return now, before

    changed = {pid: (lambda h: h[0] != h[1])(hashes(pid)) for pid in PARAMS_BEFORE_ISSUE_25}
    assert changed == {"cityarena-v1": True, "urbanarena-v1": False, "urbanground-v1": True}
    assert get_protocol("cityarena-v1").params["stop_check"] == "before-action"
    assert get_protocol("cityarena-v1").params["answer_reading"] == "reference"
    assert get_protocol("urbanground-v1").params["agent_inputs"] == "reference"
