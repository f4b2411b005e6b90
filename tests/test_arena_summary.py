"""Arena summaries per family (``summary --json``: ``metrics.evaluation_score``, ``by_family``, ``mdd``),
the arena random baseline behind ``--agent random`` and the Markdown report, on the hand-written fixture city.

The per-family means are recomputed here straight from the store's rows (a missing score counts 0)."""

import json
import re
import sqlite3
from collections import defaultdict

import pytest
from typer.testing import CliRunner

from generate_util import fixture_city
from urbanarena.cli.main import app
from urbanarena.report.arena_report import COMPARABILITY_NOTE, OSM_NOTE, write_report
from urbanarena.tasks.families.cityarena import TASK_KINDS
from urbanarena.world.city_io import save_city


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("arena_summary")
    city_dir = root / "fixture"
    save_city(fixture_city(), city_dir)
    suite = root / "suite.json"
    runner = CliRunner()
    r = runner.invoke(app, ["tasks", "generate", "--city", str(city_dir), "--per-family", "3", "--seed", "1",
                            "--out", str(suite), "--families",
                            "localization,landmark_language,map_navigation,vln,object_count,relational"])
    assert r.exit_code == 0, r.output
    out = {}
    for agent in ("oracle", "random"):
        run_dir = root / agent
        r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(suite), "--agent", agent,
                                "--seeds", "2", "--out", str(run_dir)])
        assert r.exit_code == 0, r.output
        s = runner.invoke(app, ["summary", str(run_dir), "--json"])
        assert s.exit_code == 0, s.output
        out[agent] = (run_dir, json.loads(s.output))
    return out


def _family_means(run_dir):
    kinds = {tt: k for k, (tt, _) in TASK_KINDS.items()}
    con = sqlite3.connect(run_dir / "episodes.sqlite")
    per = defaultdict(list)
    for task_type, score in con.execute("select task_type, evaluation_score from episodes"):
        per[kinds[task_type]].append(0.0 if score is None else score)
    return {k: 100 * sum(v) / len(v) for k, v in per.items()}, sum(map(len, per.values()))


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_by_family_equals_the_rows(runs, agent):
    run_dir, s = runs[agent]
    means, n = _family_means(run_dir)
    assert set(s["by_family"]) == set(means) and s["episodes"] == n
    for k, m in means.items():
        fam = s["by_family"][k]
        assert fam["mean"] == pytest.approx(m)
        assert fam["ci95"][0] <= fam["mean"] + 1e-9 <= fam["ci95"][1] + 2e-9
    assert s["metrics"]["evaluation_score"] == pytest.approx(
        100 * sum(r or 0.0 for (r,) in sqlite3.connect(run_dir / "episodes.sqlite").execute(
            "select evaluation_score from episodes")) / n)
    assert s["mdd"]["sizes"]["mini"]["tasks"] == 175
    assert s["mdd"]["this_run"]["tasks"] == s["tasks"]


def test_oracle_scores_every_family_100(runs):
    _, s = runs["oracle"]
    assert s["agent"] == "arena-oracle"
    assert all(f["mean"] == pytest.approx(100.0) for f in s["by_family"].values())


def test_random_answers_are_legal_guesses(runs):
    run_dir, s = runs["random"]
    assert s["agent"] == "arena-random" and s["errors"] == 0
    con = sqlite3.connect(run_dir / "episodes.sqlite")
    rows = con.execute("select task_type, actions, invalid_actions from episodes").fetchall()
    assert all(inv == 0 for _, _, inv in rows)
    for task_type, actions, _ in rows:
        last = json.loads(actions)[-1]
        if task_type == "Localization":
            m = re.fullmatch(r"ANSWER: x:(\d) y:(\d)", last)
            assert m and all(0 <= int(g) <= 4 for g in m.groups())
        elif task_type == "Counting":
            m = re.fullmatch(r"ANSWER: (\d+)", last)
            assert m and 0 <= int(m.group(1)) <= 15


def test_report(runs, tmp_path):
    summaries = {a: s for a, (_, s) in runs.items()}
    md, js = write_report(summaries, tmp_path, suite="fixture")
    text = md.read_text(encoding="utf-8")
    assert OSM_NOTE in text and COMPARABILITY_NOTE in text
    data = json.loads(js.read_text(encoding="utf-8"))
    for agent, s in summaries.items():
        for k, f in s["by_family"].items():
            assert data["agents"][agent]["by_family"][k]["mean"] == f["mean"]
            assert f"| {k} (" in text
    assert "| **overall** |" in text


def test_mdd_text_labels_this_runs_figure():
    """The summary's closing sentence says what its last figure is (issue 27 item 7: it had no label)."""
    from urbanarena.cli.main import _mdd_text

    mdd = {"alpha": 0.05, "power": 0.8, "sd": 0.5,
           "sizes": {"mini": {"tasks_per_family": 25, "per_family": 39.6, "overall": 14.98}},
           "this_run": {"tasks": 175, "overall": 14.98}}
    text = _mdd_text(mdd)
    assert "mini (25/family) 39.6 per family, 15.0 overall" in text
    assert text.endswith("Minimum detectable difference of this run (175 tasks): 14.98 points overall.")
