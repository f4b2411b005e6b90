"""``urbanarena run --trace --rounds n``: one trace folder per round (``traces/<slug>/round-<k>/``), each
holding exactly that round's steps, and resumable: a run killed inside a store commit and resumed
ends with the same folders (no stale round of the interrupted attempt) and the same steps as an
uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from runner_util import write_inputs
from urbanarena.cli.main import app
from urbanarena.runner.store import KILL_ENV, Store
from urbanarena.runner.trace import trace_slug

TESTS = Path(__file__).resolve().parent
ROUNDS, N_TASKS = 3, 4


def _args(city_dir, task_path, out):
    return ["run", "--city", str(city_dir), "--tasks", str(task_path), "--agent", "random", "--strategy", "B2",
            "--rounds", str(ROUNDS), "--max-steps", "8", "--trace", "--out", str(out)]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def _lines(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]


def check_round_folders(run_dir: Path) -> dict[str, list[list]]:
    """Every stored job has round-1..round-n folders holding its rounds' steps; returns {slug: [actions per round]}."""
    with Store(run_dir / "episodes.sqlite", readonly=True) as st:
        rows = list(st.rows())
    assert len(rows) == N_TASKS
    out = {}
    for r in rows:
        slug = trace_slug(r["task_id"], r["seed"], r["config_hash"])
        job = run_dir / "traces" / slug
        assert r["artifact_dir"] == f"traces/{slug}"
        assert sorted(p.name for p in job.iterdir()) == [f"round-{k}" for k in range(1, ROUNDS + 1)]
        per_round = r["details"]["per_round"]
        assert [pr["round"] for pr in per_round] == list(range(1, ROUNDS + 1))
        out[slug] = []
        for pr in per_round:
            folder = run_dir / pr["trace_dir"]
            assert folder == job / f"round-{pr['round']}"
            lines = _lines(folder)
            assert [x["step"] for x in lines] == list(range(1, pr["steps"] + 1))
            assert [x["action"] for x in lines] == pr["actions"]
            assert [x["observation"]["node"] for x in lines] == pr["trajectory"][:len(pr["actions"])]
            out[slug].append(pr["actions"])
    return out


def test_each_round_has_its_own_trace_folder_and_resume_rewrites_the_job(tmp_path):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=5, n_tasks=N_TASKS)
    ref = CliRunner().invoke(app, _args(city_dir, task_path, tmp_path / "ref"), catch_exceptions=False)
    assert ref.exit_code == 0, ref.output
    want = check_round_folders(tmp_path / "ref")
    # the rounds differ (each draws its own rng stream), so the folders are not copies of one round
    assert any(len({json.dumps(a) for a in acts}) > 1 for acts in want.values())

    run_dir = tmp_path / "crashy"
    p = subprocess.run([sys.executable, "-m", "urbanarena.cli.main", *_args(city_dir, task_path, run_dir)],
                       env=_env(**{KILL_ENV: "2"}), capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    with Store(run_dir / "episodes.sqlite", readonly=True) as st:
        stored = {trace_slug(r["task_id"], r["seed"], r["config_hash"]) for r in st.rows()}
    assert len(stored) == 1
    # the killed job wrote its traces but has no row; plant a stale round folder in it
    [killed] = [d for d in (run_dir / "traces").iterdir() if d.name not in stored]
    (killed / "round-7").mkdir()
    (killed / "round-7" / "steps.jsonl").write_text("{}\n")
    p = subprocess.run([sys.executable, "-m", "urbanarena.cli.main", *_args(city_dir, task_path, run_dir)],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"{N_TASKS - 1} episodes run, 1 skipped" in p.stdout
    assert check_round_folders(run_dir) == want
