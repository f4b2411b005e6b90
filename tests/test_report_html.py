"""``urbanarena report``: runs made with the CLI (arena families on the hand-written OSM fixture city,
CitySeeker-style graph tasks on the synthetic grid; agents oracle and random) rendered to one HTML file,
parsed back with the stdlib HTML parser and checked against ``summarize_run`` and against numbers
recomputed here straight from the SQLite store."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from generate_util import fixture_city  # noqa: E402
from runner_util import write_inputs  # noqa: E402
from urbanarena.cli.main import app  # noqa: E402
from urbanarena.report.significance import holm  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.runner.summary import summarize_run  # noqa: E402
from urbanarena.world.city_io import save_city  # noqa: E402

if not any(c.name == "report" for c in app.registered_commands):  # until cli/main.py registers it
    from urbanarena.cli.report_cmd import report as _report

    app.command("report")(_report)

runner = CliRunner()
RESAMPLES = 300
FAMILIES = "localization,landmark_language,map_navigation,vln,object_count,relational"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


class Tables(HTMLParser):
    """Every ``<table id=...>``: a list of rows, each a list of ``(attrs, text)`` cells; also img sources."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[dict]] = {}
        self.imgs: list[str] = []
        self._table = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id", f"anon{len(self.tables)}"), [])
        elif tag == "tr" and self._table is not None:
            self._row = {"attrs": a, "cells": []}
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [a, ""]
            self._row["cells"].append(self._cell)
        elif tag == "img":
            self.imgs.append(a.get("src", ""))

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "tr":
            self._row = None
        elif tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data


def parse(path: Path) -> Tables:
    p = Tables()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def header(t: Tables, tid: str) -> list[str]:
    return [c[1] for c in t.tables[tid][0]["cells"]]


def stored_configs(run_dir: Path) -> list[dict]:
    """The ``configs`` table's configs (parsed)."""
    con = sqlite3.connect(run_dir / STORE_FILE)
    out = [json.loads(r[0]) for r in con.execute("SELECT config FROM configs")]
    con.close()
    return out


def db(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(run_dir / STORE_FILE)
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM episodes")]
    con.close()
    return rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    city_dir = root / "fixture"
    save_city(fixture_city(), city_dir)
    suite = root / "suite.json"
    r = invoke("tasks", "generate", "--city", city_dir, "--per-family", "2", "--seed", "1", "--out", suite,
               "--families", FAMILIES)
    assert r.exit_code == 0, r.output
    out = {}
    for agent, seeds in (("oracle", 1), ("random", 2)):
        d = root / f"arena_{agent}"
        r = invoke("run", "--city", city_dir, "--tasks", suite, "--agent", agent, "--seeds", seeds, "--out", d)
        assert r.exit_code == 0, r.output
        out[f"arena_{agent}"] = d
    grid_city_dir, grid_tasks, _, _ = write_inputs(root / "grid", n=5, n_tasks=6)
    for agent in ("oracle", "random"):
        d = root / f"graph_{agent}"
        r = invoke("run", "--city", grid_city_dir, "--tasks", grid_tasks, "--agent", agent, "--seeds", 2,
                   "--max-steps", 10, "--out", d)
        assert r.exit_code == 0, r.output
        out[f"graph_{agent}"] = d
    html = root / "out" / "report.html"
    r = invoke("report", out["arena_oracle"], out["arena_random"], out["graph_oracle"], out["graph_random"],
               "--out", html, "--resamples", RESAMPLES, "--bootstrap", 2000, "--min-common-tasks", 2,
               "--title", "<script>alert('x')</script> & runs")
    assert r.exit_code == 0, r.output
    return out, html, parse(html)


ARENA = "cityarena-v1"
GRAPH = "cityseeker-v1-graph"


def _cells(row):
    return row["cells"][1:]


def test_arena_family_table_equals_summary_and_store(runs):
    dirs, _, t = runs
    rows = t.tables[f"{ARENA}-family"]
    assert header(t, f"{ARENA}-family")[1:] == ["arena-oracle", "arena-random"]
    from urbanarena.tasks.families.cityarena import TASK_KINDS

    kinds = {tt: k for k, (tt, _) in TASK_KINDS.items()}
    for col, name in enumerate(("arena_oracle", "arena_random")):
        s = summarize_run(dirs[name], n_resamples=RESAMPLES)
        per = defaultdict(list)
        for r in db(dirs[name]):
            per[kinds[r["task_type"]]].append(0.0 if r["evaluation_score"] is None else r["evaluation_score"])
        shown = {r["attrs"]["data-group"]: _cells(r)[col][0] for r in rows[1:]}
        assert set(shown) == set(per) | {"overall"}
        for fam, vals in per.items():
            cell = shown[fam]
            assert float(cell["data-mean"]) == pytest.approx(100 * sum(vals) / len(vals))
            assert float(cell["data-mean"]) == s["by_family"][fam]["mean"]
            assert [float(cell["data-lo"]), float(cell["data-hi"])] == s["by_family"][fam]["ci95"]
        allv = [v for vals in per.values() for v in vals]
        assert float(shown["overall"]["data-mean"]) == pytest.approx(100 * sum(allv) / len(allv))
        assert [float(shown["overall"]["data-lo"]), float(shown["overall"]["data-hi"])] == s["ci95"]["evaluation_score"]


def test_difficulty_tables_equal_the_store(runs):
    dirs, _, t = runs
    for tid, names, key in ((f"{ARENA}-by-difficulty", ("arena_oracle", "arena_random"), "evaluation_score"),
                            (f"{GRAPH}-by-difficulty", ("graph_oracle", "graph_random"), "tc_proximity_50m")):
        rows = t.tables[tid][1:]
        for col, name in enumerate(names):
            per = defaultdict(list)
            for r in db(dirs[name]):
                per[r["difficulty"]].append(0.0 if r[key] is None else r[key])
            shown = {r["attrs"]["data-group"]: float(_cells(r)[col][0]["data-mean"]) for r in rows
                     if _cells(r)[col][0].get("data-mean")}
            assert shown == pytest.approx({d: 100 * sum(v) / len(v) for d, v in per.items()})
            s = summarize_run(dirs[name], n_resamples=RESAMPLES)
            for r in rows:
                c = _cells(r)[col][0]
                g = s["by_difficulty"][r["attrs"]["data-group"]]
                assert [float(c["data-lo"]), float(c["data-hi"])] == g["ci95"][key]
    assert "data:image/png;base64," in "".join(t.imgs)


def test_graph_metric_table_equals_the_store(runs):
    dirs, _, t = runs
    rows = t.tables[f"{GRAPH}-family"][1:]
    keys = [r["attrs"]["data-group"] for r in rows]
    assert {"tc_exact", "tc_proximity_50m", "spl", "ndtw", "goal_dist_m"} <= set(keys)
    from urbanarena.tasks.metrics import PERCENT_KEYS

    for col, name in enumerate(("graph_oracle", "graph_random")):
        store = db(dirs[name])
        for r in rows:
            k = r["attrs"]["data-group"]
            vals = [x[k] for x in store if x[k] is not None]
            scale = 100 if k in PERCENT_KEYS else 1
            assert float(_cells(r)[col][0]["data-mean"]) == pytest.approx(scale * sum(vals) / len(vals))
    oracle = {r["attrs"]["data-group"]: float(_cells(r)[0][0]["data-mean"]) for r in rows}
    assert oracle["tc_exact"] == 100.0 and oracle["goal_dist_m"] == 0.0


def test_counters_and_failure_causes(runs):
    dirs, _, t = runs
    for sec, names, ok_key in ((ARENA, ("arena_oracle", "arena_random"), "scored_success"),
                               (GRAPH, ("graph_oracle", "graph_random"), "tc_proximity_50m")):
        crow = {r["attrs"]["data-label"]: {c[0].get("data-k"): c[1] for c in r["cells"]}
                for r in t.tables[f"{sec}-counters"][1:]}
        frow = {r["attrs"]["data-label"]: {c[0].get("data-k"): c for c in r["cells"]}
                for r in t.tables[f"{sec}-failures"][1:]}
        for name, label in zip(names, crow):
            store = db(dirs[name])
            c = crow[label]
            assert int(c["agent_errors"]) == sum(r["stop_reason"] == "error" for r in store) == 0
            assert int(c["invalid_actions"]) == sum(r["invalid_actions"] for r in store)
            assert float(c["steps_per_episode"]) == pytest.approx(
                sum((r["act_requests"] or r["steps"]) for r in store) / len(store), abs=0.05)
            f = frow[label]
            succ = sum(1 for r in store if r[ok_key] == 1)
            assert int(f["successes"][1]) == succ and int(f["failures"][1]) == len(store) - succ
            buckets = [k for k in f if k not in (None, "successes", "failures")]
            assert sum(int(f[k][0]["data-n"]) for k in buckets) == len(store) - succ
    # the oracles never fail; the random walker's failures on position tasks are Explore/Grounding/Planning
    assert all(int(c[0]["data-n"]) == 0 for k, c in
               {c[0].get("data-k"): c for c in t.tables[f"{ARENA}-failures"][1]["cells"]}.items()
               if c[0].get("data-n") is not None)
    g_random = {c[0].get("data-k"): c for c in t.tables[f"{GRAPH}-failures"][2]["cells"]}
    assert int(g_random["Unclassified"][0]["data-n"]) == 0  # the grid city and its tasks were loaded


def _graph_failures_recomputed(run_dir):
    """Explore/Planning/Grounding of the random graph run recomputed from the store and the task file."""
    from urbanarena.tasks.schema import load_task_file
    from urbanarena.world.city_io import load_city

    meta = json.loads((run_dir / "run.json").read_text())
    city = load_city(meta["city"]["directory"])
    tasks = {t.task_id: t for t in load_task_file(meta["tasks"]["spec"]).tasks}
    out = defaultdict(int)
    for r in db(run_dir):
        if r["tc_proximity_50m"] == 1:
            continue
        task = tasks[r["task_id"]]
        goal = task.goals[-1].node
        near = min(city.distance_m(n, goal) for n in json.loads(r["trajectory"])) <= task.success_radius_m
        out["Planning" if near else ("Grounding" if r["stop_reason"] == "stop" else "Explore")] += 1
    return out


def test_graph_failure_rules_recomputed(runs):
    dirs, _, t = runs
    want = _graph_failures_recomputed(dirs["graph_random"])
    got = {c[0]["data-k"]: int(c[0]["data-n"]) for c in t.tables[f"{GRAPH}-failures"][2]["cells"]
           if c[0].get("data-n") is not None}
    assert {k: v for k, v in got.items() if v} == dict(want)


def test_threshold_sensitivity_recomputed(runs):
    dirs, _, t = runs
    rows = {r["attrs"]["data-label"]: r for r in t.tables[f"{ARENA}-sensitivity"][1:]}
    scales = [float(h.rstrip("x")) for h in header(t, f"{ARENA}-sensitivity")[1:]]
    assert scales == [0.75, 1.0, 1.25, 1.5]
    for label, name in (("arena-oracle", "arena_oracle"), ("arena-random", "arena_random")):
        store = db(dirs[name])
        for i, s in enumerate(scales):
            vals = []
            for r in store:
                if r["evaluation_metric"] == "coordinate_match" and r["status"] == "ANSWER":
                    vals.append(1.0 if r["distance_to_goal"] < s * r["validation_threshold"] else 0.0)
                else:
                    vals.append(r["evaluation_score"] or 0.0)
            assert float(_cells(rows[label])[i][0]["data-mean"]) == pytest.approx(100 * sum(vals) / len(vals))
        # at 1.0x the rescoring reproduces the stored run mean
        s1 = summarize_run(dirs[name], n_resamples=RESAMPLES)["metrics"]["evaluation_score"]
        assert float(_cells(rows[label])[1][0]["data-mean"]) == pytest.approx(s1)
    from scipy.stats import kendalltau

    base = [float(_cells(rows[a])[1][0]["data-mean"]) for a in ("arena-oracle", "arena-random")]
    for i in range(4):
        other = [float(_cells(rows[a])[i][0]["data-mean"]) for a in ("arena-oracle", "arena-random")]
        tau_cell = _cells(rows["kendall-tau"])[i][0]["data-tau"]
        want = kendalltau(base, other).statistic
        assert (tau_cell == "" and want != want) or float(tau_cell) == pytest.approx(want)
    g = {r["attrs"]["data-label"]: r for r in t.tables[f"{GRAPH}-sensitivity"][1:]}
    store = db(dirs["graph_random"])
    for i, s in enumerate(scales):  # grid tasks: success radius 50 m
        want = 100 * sum(r["goal_dist_m"] <= 50 * s for r in store) / len(store)
        assert float(_cells(g["random"])[i][0]["data-mean"]) == pytest.approx(want)
    assert float(_cells(g["random"])[1][0]["data-mean"]) == pytest.approx(
        100 * sum(r["tc_proximity_50m"] for r in store) / len(store))


def test_paired_comparison_recomputed(runs):
    dirs, _, t = runs
    from urbanarena.tasks.families.cityarena import TASK_KINDS

    kinds = {tt: k for k, (tt, _) in TASK_KINDS.items()}

    def per_task(name):
        acc = defaultdict(list)
        for r in db(dirs[name]):
            acc[(kinds[r["task_type"]], r["task_id"])].append(r["evaluation_score"] or 0.0)
        return {k: sum(v) / len(v) for k, v in acc.items()}

    base, other = per_task("arena_oracle"), per_task("arena_random")
    rows = t.tables[f"{ARENA}-significance"][1:]
    ps, holms = [], []
    for r in rows:
        fam = r["attrs"]["data-family"]
        cells = {c[0].get("data-k"): c for c in r["cells"]}
        common = [k for k in base if k[0] == fam and k in other]
        assert int(cells["n_tasks"][1]) == len(common) == 2
        want = 100 * sum(other[k] - base[k] for k in common) / len(common)
        assert float(cells["diff"][0]["data-v"]) == pytest.approx(want)
        ps.append(float(cells["p"][0]["data-v"]))
        holms.append(float(cells["p_holm"][0]["data-v"]))
    assert len(rows) == 6
    assert holms == pytest.approx(holm(ps))


def test_maps_attribution_escaping_and_self_containment(runs):
    _, html, t = runs
    text = html.read_text(encoding="utf-8")
    assert "<script" not in text.lower() and "&lt;script&gt;" in text
    assert 'src="http' not in text and "href=\"http" not in text
    pngs = [s for s in t.imgs if s.startswith("data:image/png;base64,")]
    assert len(pngs) == len(t.imgs) >= 2 + 4 * 3  # two charts, three maps for each of four runs
    assert "© OpenStreetMap contributors" in text  # the OSM fixture city's attribution
    # each score table names its protocol, its task source and its judge
    for tid in (f"{ARENA}-family", f"{GRAPH}-family", f"{ARENA}-significance"):
        assert tid in t.tables
    for cap in ("protocol <code>cityarena-v1</code>", "protocol <code>cityseeker-v1</code>", "suite.json",
                "tasks.json", "judge: none"):
        assert cap in text
    assert "runs of different protocols side by side" in text


def test_baseline_option_flips_the_difference(runs, tmp_path):
    dirs, _, t = runs
    out = tmp_path / "b.html"
    r = invoke("report", dirs["arena_oracle"], dirs["arena_random"], "--out", out, "--baseline", "arena-random",
               "--maps", 0, "--resamples", 50, "--bootstrap", 500, "--min-common-tasks", 2)
    assert r.exit_code == 0, r.output
    flipped = {row["attrs"]["data-family"]: float({c[0].get("data-k"): c for c in row["cells"]}["diff"][0]["data-v"])
               for row in parse(out).tables[f"{ARENA}-significance"][1:]}
    orig = {row["attrs"]["data-family"]: float({c[0].get("data-k"): c for c in row["cells"]}["diff"][0]["data-v"])
            for row in t.tables[f"{ARENA}-significance"][1:]}
    assert flipped == pytest.approx({k: -v for k, v in orig.items()})


def test_bad_input(runs, tmp_path):
    dirs, _, _ = runs
    r = invoke("report", tmp_path / "nope", "--out", tmp_path / "r.html")
    assert r.exit_code == 2 and "error:" in r.output and "nope" in r.output
    empty = tmp_path / "empty"
    Store(empty / STORE_FILE).close()  # a store with its schema and no episodes
    r = invoke("report", empty, "--out", tmp_path / "r.html")
    assert r.exit_code == 2 and "error:" in r.output and "no episodes" in r.output
    (tmp_path / "plain").mkdir()
    r = invoke("report", tmp_path / "plain", "--out", tmp_path / "r.html")
    assert r.exit_code == 2 and "no run store" in r.output
    r = invoke("report", dirs["graph_oracle"], "--out", tmp_path / "r.html", "--baseline", "nobody", "--maps", 0)
    assert r.exit_code == 2 and "--baseline" in r.output
    assert not (tmp_path / "r.html").exists()


def test_arena_failure_rules_recomputed(runs):
    """The arena buckets of the random run, recomputed from the store's JSON columns."""
    dirs, _, t = runs
    want = defaultdict(int)
    for r in db(dirs["arena_random"]):
        if r["scored_success"] == 1:
            continue
        details, metrics = json.loads(r["details"]), json.loads(r["metrics"])
        env = details["env_counters"]
        if env["parse_errors"] + env["invalid_actions"] >= 0.5 * max(1, r["act_requests"]) \
                or metrics["validation"]["parsed"] is False:
            want["Action"] += 1
        elif r["evaluation_metric"] == "coordinate_match":
            gx, gy = (float(v.split(":")[1]) for v in r["expected"].split())
            near = min(((x - gx) ** 2 + (y - gy) ** 2) ** 0.5 for x, y in details["positions"])
            want["Planning" if near <= r["validation_threshold"] else
                 ("Grounding" if r["status"] == "ANSWER" else "Explore")] += 1
        elif r["status"] != "ANSWER":
            want["Explore"] += 1
        elif r["evaluation_metric"] == "exact_match" or (r["evaluation_metric"] == "name_match" and isinstance(
                pred := metrics["validation"]["prediction"], dict) and pred.get("distractors_read")):
            want["Grounding"] += 1
        else:
            want["Perception"] += 1
    got = {c[0]["data-k"]: int(c[0]["data-n"]) for c in t.tables[f"{ARENA}-failures"][2]["cells"]
           if c[0].get("data-n") is not None}
    assert {k: v for k, v in got.items() if v} == dict(want)


def test_runs_table_and_strategy_table_say_what_each_run_was(runs, tmp_path):
    """Issue 25 item 9: strategies, rounds, render style, population and privilege per run, a per-strategy table,
    and privileged runs marked (the oracle's class is privileged; B2 is a privileged strategy)."""
    out, _, _ = runs
    grid_city_dir, grid_tasks, _, _ = write_inputs(tmp_path / "grid", n=5, n_tasks=6)
    b2 = tmp_path / "graph_random_b2"
    r = invoke("run", "--city", grid_city_dir, "--tasks", grid_tasks, "--agent", "random", "--strategy", "B2",
               "--seeds", 2, "--max-steps", 10, "--out", b2)
    assert r.exit_code == 0, r.output
    html = tmp_path / "rep.html"
    r = invoke("report", out["graph_oracle"], out["graph_random"], b2, out["arena_random"], "--out", html,
               "--resamples", RESAMPLES, "--bootstrap", 200, "--min-common-tasks", 2)
    assert r.exit_code == 0, r.output
    t = parse(html)
    head = header(t, "runs-table")
    rows = {row["cells"][0][1]: row for row in t.tables["runs-table"][1:]}
    col = {name: head.index(name) for name in ("agent", "strategies", "rounds", "render style", "population",
                                               "privileged")}
    by_dir = {Path(row["cells"][1][1]).name: row for row in rows.values()}
    cell = lambda d, c: by_dir[d]["cells"][col[c]][1].strip()  # noqa: E731
    (b2_config,) = stored_configs(b2)
    spec = b2_config["strategies"]["spec"]
    assert spec.startswith("B2") and cell("graph_random_b2", "strategies") == spec
    assert cell("graph_random", "strategies") == "none"
    assert "strategies B2" in cell("graph_random_b2", "privileged")
    assert "agent oracle" in cell("graph_oracle", "privileged")
    assert cell("graph_random", "privileged") == "no" and cell("arena_random", "privileged") == "no"
    assert by_dir["graph_oracle"]["attrs"].get("class") == "privileged"
    assert by_dir["graph_random"]["attrs"].get("class") is None
    assert cell("graph_random", "rounds") == "1"
    # the arena run's config records its views' style and population; the store is the independent source
    (cfg,) = stored_configs(out["arena_random"])
    view = cfg["extra"]["arena_view"]
    assert cell("arena_random", "render style") == view["render_style"]
    assert cell("arena_random", "population") == str(view.get("population") or "none")
    # the per-strategy table: one row per graph run, success = the summary's sr with its CI
    strat = [tid for tid in t.tables if tid.endswith("-strategies")]
    assert len(strat) == 1
    srows = t.tables[strat[0]][1:]
    assert len(srows) == 3
    s = summarize_run(b2)
    b2row = next(r for r in srows if r["cells"][2][1].strip() == spec)
    key = b2row["cells"][5][0]["data-key"]
    assert key in ("tc", "tc_proximity_50m")  # the graph protocol's success key
    lo, hi = s["ci95"][key]
    assert b2row["cells"][5][1].strip() == f"{key} {s['metrics'][key]:.1f} [{lo:.1f}, {hi:.1f}]"
