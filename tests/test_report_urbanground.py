"""``urbanarena report`` on UrbanGround (continuous, family ``urbanground``, protocol ``urbanground-v1``) runs.

A small ladder suite on the hand-written OSM fixture city, run by ``ug-oracle`` and ``ug-random`` through
the CLI, plus a RUN_DIR of hand-made failing episodes (real episodes of scripted agents in
``ContinuousEnv``: an oracle blind to the road closure, one that walks 16.8 m past its goal, a question
answered "Z" and one answered wrongly). The rendered HTML is parsed back and checked against
``summarize_run`` and against numbers recomputed here from the SQLite store and the task file by a second
implementation of the documented rules (docs/report.md, U0-U11). Also: a duplicate task id in a task file,
and the privileged-run note of ``urbanarena summary``.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from generate_util import fixture_city  # noqa: E402
from test_report_html import db, header, invoke, parse  # noqa: E402
from urbanarena.agents.base import Agent  # noqa: E402
from urbanarena.agents.urbanground_oracle import UrbanGroundOracle  # noqa: E402
from urbanarena.report.significance import holm  # noqa: E402
from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner  # noqa: E402
from urbanarena.runner.store import STORE_FILE, Store  # noqa: E402
from urbanarena.runner.summary import summarize_run  # noqa: E402
from urbanarena.tasks.schema import load_task_file  # noqa: E402
from urbanarena.world.city_io import load_city, save_city  # noqa: E402

RESAMPLES = 300
SEC = "urbanground-v1"
R_M = 15.0  # UrbanGround's arrival radius (the generated tasks' success_radius_m)
PERCENT = {"sr", "pna", "spr", "pcr", "zone_respected", "answer_correct", "oracle_sr", "endpoint_regressed",
           "on_time_ratio"}
LABELS = {"oracle": "ug-oracle", "random": "ug-random", "hand": "hand"}


# ------------------------------------------------------------------ hand-made agents
class ClosureBlind(UrbanGroundOracle):
    """The oracle without its knowledge of the closures: it walks the shortest route through the closure,
    which is announced at 30 s and lies >= 60 m along that route (crossed after the notice)."""

    name = "hand"

    def reset(self, task, context):
        context.closures = []
        super().reset(task, context)


class Overshoot(UrbanGroundOracle):
    """The oracle to the goal, then a 180 degree turn and 6 x 2 s forward at 1.4 m/s: 16.8 m past it."""

    name = "hand"

    def reset(self, task, context):
        super().reset(task, context)
        self.tail = None

    def act(self, observation):
        if self.tail is None:
            a = super().act(observation)
            if a["action"] != "terminate":
                return a
            self.tail = [{"action": "look", "yaw": 180.0, "pitch": 0.0}]
            self.tail += [{"action": "move", "dir": "forward", "seconds": 2.0}] * 6
        return self.tail.pop(0) if self.tail else {"action": "terminate"}


class Answers(Agent):
    """Answers a question at once with a fixed text."""

    name = "hand"
    action_style = "continuous"

    def __init__(self, answer: str):
        super().__init__()
        self.answer = answer

    def reset(self, task, context):
        pass

    def act(self, observation):
        return {"action": "terminate", "answer": self.answer}


def _hand_run(root: Path, city_dir: Path, suite: Path, like: Path) -> Path:
    city = load_city(city_dir)
    tasks = load_task_file(suite).tasks
    first = {}
    for t in tasks:
        first.setdefault(t.category, t)
    orient = first["l1_orientation"]
    wrong = next(x for x in "ABCD" if x != orient.answer)
    plan = [(first["l5_road_closure"], 0, ClosureBlind), (first["l2_short_range"], 0, Overshoot),
            (orient, 0, lambda: Answers("Z")), (orient, 1, lambda: Answers(wrong))]
    run_dir = root / "hand"
    run_dir.mkdir()
    rows = [ContinuousEpisodeRunner(city, f, "hand").run(t, seed, SEC, 300, config_hash="hand0001")
            for t, seed, f in plan]
    with Store(run_dir / STORE_FILE) as st:
        st.add_config("hand0001", {"agent": {"name": "hand"}, "protocol": {"id": SEC}}, "2026-01-01T00:00:00+00:00")
        for r in rows:
            st.add(r)
    meta = json.loads((like / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({"format": meta["format"], "format_version": meta["format_version"],
                                                  "city": meta["city"], "tasks": meta["tasks"]}))
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ugreport")
    city_dir = root / "city"
    save_city(fixture_city(), city_dir)
    suite = root / "ug.json"
    r = invoke("tasks", "generate", "--city", city_dir, "--suite", "urbanground", "--per-family", 2, "--seed", 0,
               "--out", suite)
    assert r.exit_code == 0, r.output
    dirs = {}
    for agent, seeds in (("oracle", 1), ("random", 2)):
        d = root / agent
        r = invoke("run", "--city", city_dir, "--tasks", suite, "--agent", f"ug-{agent}", "--seeds", seeds, "--out", d)
        assert r.exit_code == 0, r.output
        dirs[agent] = d
    dirs["hand"] = _hand_run(root, city_dir, suite, dirs["random"])
    html = root / "report.html"
    r = invoke("report", dirs["oracle"], dirs["random"], dirs["hand"], "--out", html, "--resamples", RESAMPLES,
               "--bootstrap", 1000, "--min-common-tasks", 2, "--maps", 2)
    assert r.exit_code == 0, r.output
    city = load_city(city_dir)
    tasks = {t.task_id: t for t in load_task_file(suite).tasks}
    return {"dirs": dirs, "html": html, "t": parse(html), "city": city, "tasks": tasks, "suite": suite,
            "city_dir": city_dir}


def _cells(row):
    return row["cells"][1:]


def _col(t, tid, label):
    return header(t, tid).index(label) - 1


def _store(run_dir):
    out = []
    for r in db(run_dir):
        r = dict(r)
        r["m"], r["d"] = json.loads(r["metrics"]), json.loads(r["details"])
        out.append(r)
    return out


def _mean(vals, key):
    vals = [v for v in vals if v is not None]
    return (100.0 if key in PERCENT else 1.0) * sum(vals) / len(vals)


# ------------------------------------------------------------------ scores
def test_score_tables_equal_summary_and_store(runs):
    t, dirs = runs["t"], runs["dirs"]
    text = runs["html"].read_text(encoding="utf-8")
    assert "(urbanground runs)" in text and "(graph runs)" not in text
    assert "protocol <code>urbanground-v1</code>" in text
    fam = {r["attrs"]["data-group"]: r for r in t.tables[f"{SEC}-family"][1:]}
    assert {"sr", "pna", "spr", "pcr", "on_time_ratio"} <= set(fam)
    for name in ("oracle", "random", "hand"):
        s = summarize_run(dirs[name], n_resamples=RESAMPLES)
        store = _store(dirs[name])
        col = _col(t, f"{SEC}-family", LABELS[name])
        for key, row in fam.items():
            c = _cells(row)[col][0]
            if s["metrics"].get(key) is None:
                assert c["data-mean"] == ""
                continue
            assert float(c["data-mean"]) == s["metrics"][key]  # report == summary, to the last digit
            assert [float(c["data-lo"]), float(c["data-hi"])] == s["ci95"][key]
            assert float(c["data-mean"]) == pytest.approx(_mean([r["m"].get(key) for r in store], key))
        # per sub-family and per level: SR, PNA, SPR, PCR (where some group has a value)
        for grp, field in (("by-family", "by_family"), ("by-level", "by_level")):
            for key in ("sr", "pna", "spr", "pcr"):
                rows = t.tables[f"{SEC}-{grp}-{key}"][1:]
                col = _col(t, f"{SEC}-{grp}-{key}", LABELS[name])
                per = defaultdict(list)
                for r in store:
                    per[r["category"] if field == "by_family" else r["d"]["level"]].append(r["m"].get(key))
                for row in rows:
                    g, c = row["attrs"]["data-group"], _cells(row)[col][0]
                    if not any(v is not None for v in per.get(g, [])):
                        assert c["data-mean"] == ""
                        continue
                    assert float(c["data-mean"]) == s[field][g]["metrics"][key]
                    assert [float(c["data-lo"]), float(c["data-hi"])] == s[field][g]["ci95"][key]
                    assert float(c["data-mean"]) == pytest.approx(_mean(per[g], key))
    spr_groups = [r["attrs"]["data-group"] for r in t.tables[f"{SEC}-by-family-spr"][1:]]
    assert spr_groups == ["l5_road_closure"]  # SPR exists only where closures do
    assert [r["attrs"]["data-group"] for r in t.tables[f"{SEC}-by-level-sr"][1:]] == ["L1", "L2", "L3", "L4", "L5"]


def test_oracle_has_full_success_and_no_failures(runs):
    t = runs["t"]
    col = _col(t, f"{SEC}-family", "ug-oracle")
    fam = {r["attrs"]["data-group"]: r for r in t.tables[f"{SEC}-family"][1:]}
    assert float(_cells(fam["sr"])[col][0]["data-mean"]) == 100.0
    assert float(_cells(fam["spr"])[col][0]["data-mean"]) == 100.0
    assert all(float(_cells(r)[col][0]["data-mean"]) == 100.0 for r in t.tables[f"{SEC}-by-family-sr"][1:])
    frow = {r["attrs"]["data-label"]: {c[0].get("data-k"): c for c in r["cells"]}
            for r in t.tables[f"{SEC}-failures"][1:]}
    o = frow["ug-oracle"]
    n = len(db(runs["dirs"]["oracle"]))
    assert int(o["successes"][1]) == n and int(o["failures"][1]) == 0
    assert all(int(c[0]["data-n"]) == 0 for c in o.values() if c[0].get("data-n") is not None)


# ------------------------------------------------------------------ failure rules (second implementation)
WRONG_ANSWER = {"l1_visual_recognition": "Perception", "l1_orientation": "Grounding",
                "l1_active_exploration": "Perception"}


def _goals_xy(task, city):
    pts = task.extra.get("goal_points") if task.category.startswith("l3_") else None  # search: every place
    if pts:
        return [city.frame.to_xy(p["lat"], p["lon"]) for p in pts]
    return [city.frame.to_xy(g.position.lat, g.position.lon) for g in task.goals]


def _bucket(r, task, city):
    m, d = r["m"], r["d"]
    if m["sr"] == 1:
        return None
    if r["stop_reason"] == "error":
        return "Error"
    env = d["env_counters"]
    if env["parse_errors"] + env["invalid_actions"] >= 0.5 * max(1, r["steps"]):
        return "Action"
    kind, ans = d["task_kind"], d.get("answer")
    opts = task.extra.get("options") or []
    if kind == "choice" and r["stop_reason"] == "terminate":
        ok = ans is not None and (str(ans).strip().upper() in "ABCD"[:len(opts)]
                                  or str(ans).strip().lower() in [o.lower() for o in opts])
        if not ok:
            return "Action"
    if m.get("spr") == 0 or m.get("zone_respected") == 0 or r["stop_reason"] == "closure_violation":
        return "Planning"
    if m.get("pcr") == 1:
        return "Action"
    if kind == "choice":
        if ans is None or (r["category"] == "l1_active_exploration" and r["steps"] <= 1):
            return "Explore"
        return WRONG_ANSWER[r["category"]]
    goals = _goals_xy(task, city)
    if kind in ("navigation", "search"):
        targets = goals if kind == "search" else goals[-1:]
        ends = [(s[1], s[2]) for s in d["samples"] if s[6]]  # positions where a step ended
        near = any(math.dist(p, g) <= R_M for p in ends for g in targets)
        return "Planning" if near else "Explore"
    return "Planning" if m["stops_reached"] >= 1 else "Explore"


def _failure_row(t, label):
    for r in t.tables[f"{SEC}-failures"][1:]:
        if r["attrs"]["data-label"] == label:
            return {c[0]["data-k"]: int(c[0]["data-n"]) for c in r["cells"] if c[0].get("data-n") is not None}
    raise KeyError(label)


def test_failure_buckets_recomputed(runs):
    t, dirs, tasks, city = runs["t"], runs["dirs"], runs["tasks"], runs["city"]
    for name in ("random", "hand"):
        want = defaultdict(int)
        for r in _store(dirs[name]):
            b = _bucket(r, tasks[r["task_id"]], city)
            if b:
                want[b] += 1
        got = _failure_row(t, LABELS[name])
        assert {k: v for k, v in got.items() if v} == dict(want)
        assert sum(want.values()) == sum(1 for r in _store(dirs[name]) if r["m"]["sr"] != 1)


def test_hand_made_failures_land_in_their_buckets(runs):
    t, dirs, tasks = runs["t"], runs["dirs"], runs["tasks"]
    from urbanarena.report.failures import classify_continuous

    with Store(dirs["hand"] / STORE_FILE, readonly=True) as st:
        rows = {(r["category"], r["seed"]): r for r in st.rows()}
    closure = rows[("l5_road_closure", 0)]
    assert closure["stop_reason"] == "closure_violation" and closure["metrics"]["spr"] == 0.0
    over = rows[("l2_short_range", 0)]
    assert over["metrics"]["oracle_sr"] == 1.0 and over["metrics"]["final_distance_m"] == pytest.approx(16.8, abs=0.3)
    want = {("l5_road_closure", 0): "Planning",   # U3: crossed the announced closure
            ("l2_short_range", 0): "Planning",    # U8: was within 15 m, ended 16.8 m away
            ("l1_orientation", 0): "Action",      # U2: answer "Z" names no option
            ("l1_orientation", 1): "Grounding"}   # U7: a wrong orientation answer
    for k, bucket in want.items():
        assert classify_continuous(rows[k], tasks[rows[k]["task_id"]]) == bucket, k
    got = _failure_row(t, "hand")
    assert {k: v for k, v in got.items() if v} == {"Planning": 2, "Action": 1, "Grounding": 1}
    text = runs["html"].read_text(encoding="utf-8")
    assert "failed (Planning), final distance" in text and "closure crossed" in text  # the hand run's maps


# ------------------------------------------------------------------ threshold sensitivity
def _first_entry(samples, i0, u0, g, r):
    """(segment index, fraction) where the piecewise-linear path first comes within r of g at or after
    (i0, u0), or None."""
    for i in range(i0, len(samples) - 1):
        (x0, y0), (x1, y1) = samples[i][1:3], samples[i + 1][1:3]
        dx, dy, fx, fy = x1 - x0, y1 - y0, x0 - g[0], y0 - g[1]
        a, b, c = dx * dx + dy * dy, 2 * (fx * dx + fy * dy), fx * fx + fy * fy - r * r
        lo = u0 if i == i0 else 0.0
        if a * lo * lo + b * lo + c <= 0:
            return i, lo
        disc = b * b - 4 * a * c
        if a > 0 and disc >= 0:
            u = (-b - math.sqrt(disc)) / (2 * a)
            if lo <= u <= 1:
                return i, u
    if len(samples) == 1 and math.dist(samples[0][1:3], g) <= r:
        return 0, 0.0
    return None


def _rescored(r, task, city, s):
    m, d = r["m"], r["d"]
    kind = d["task_kind"]
    if kind == "choice":
        return m["sr"]
    if m.get("spr") == 0 or m.get("zone_respected") == 0:
        return 0.0
    goals = _goals_xy(task, city)
    fp = (d["final_position"]["x_m"], d["final_position"]["y_m"])
    if kind in ("navigation", "search"):
        dist = min(math.dist(fp, g) for g in goals) if kind == "search" else math.dist(fp, goals[-1])
        return 1.0 if dist <= s * R_M else 0.0
    sm = d["samples"]
    if kind == "multi_stop":
        return 1.0 if all(_first_entry(sm, 0, 0.0, g, s * R_M) for g in goals) else 0.0
    i, u, ok = 0, 0.0, True  # schedule: in order, each by its deadline
    for g, dl in zip(goals, task.extra["deadlines_s"]):
        hit = _first_entry(sm, i, u, g, s * R_M)
        if hit is None:
            return 0.0
        i, u = hit
        t_arr = sm[i][0] + u * (sm[i + 1][0] - sm[i][0]) if i + 1 < len(sm) else sm[i][0]
        ok = ok and t_arr <= dl
    return 1.0 if ok else 0.0


def test_threshold_sensitivity_recomputed(runs):
    t, dirs, tasks, city = runs["t"], runs["dirs"], runs["tasks"], runs["city"]
    tid = f"{SEC}-sensitivity"
    scales = [float(h.rstrip("x")) for h in header(t, tid)[1:]]
    assert scales == [0.75, 1.0, 1.25, 1.5]
    rows = {r["attrs"]["data-label"]: r for r in t.tables[tid][1:]}
    means = {}
    for name in ("oracle", "random", "hand"):
        store = _store(dirs[name])
        got = [float(c[0]["data-mean"]) for c in _cells(rows[LABELS[name]])]
        want = [100 * sum(_rescored(r, tasks[r["task_id"]], city, s) for r in store) / len(store) for s in scales]
        assert got == pytest.approx(want)
        assert got[1] == pytest.approx(summarize_run(dirs[name], n_resamples=RESAMPLES)["metrics"]["sr"])
        means[name] = got
    assert means["oracle"] == [100.0] * 4
    # hand-worked: the 16.8 m overshoot succeeds from 1.25x (18.75 m) on; the rest fail at every scale
    assert means["hand"] == pytest.approx([0.0, 0.0, 25.0, 25.0])
    from scipy.stats import kendalltau

    order = ("oracle", "random", "hand")
    for i in range(4):
        want = kendalltau([means[a][1] for a in order], [means[a][i] for a in order]).statistic
        cell = _cells(rows["kendall-tau"])[i][0]["data-tau"]
        assert (cell == "" and want != want) or float(cell) == pytest.approx(want)


# ------------------------------------------------------------------ paired comparison, maps
def test_paired_comparison_per_sub_family(runs):
    t, dirs = runs["t"], runs["dirs"]

    def per_task(name):
        acc = defaultdict(list)
        for r in _store(dirs[name]):
            acc[(r["category"], r["task_id"])].append(r["m"]["sr"])
        return {k: sum(v) / len(v) for k, v in acc.items()}

    base = per_task("oracle")
    ps, holms, seen = [], [], set()
    for row in t.tables[f"{SEC}-significance"][1:]:
        label, fam = row["attrs"]["data-label"], row["attrs"]["data-family"]
        other = per_task({"ug-random": "random", "hand": "hand"}[label])
        cells = {c[0].get("data-k"): c for c in row["cells"]}
        common = [k for k in base if k[0] == fam and k in other]
        assert int(cells["n_tasks"][1]) == len(common)
        if common:
            seen.add((label, fam))
        if len(common) < 2:  # --min-common-tasks 2: no test
            assert cells["diff"][0]["data-v"] == "" and cells["p"][0]["data-v"] == ""
            continue
        assert float(cells["diff"][0]["data-v"]) == pytest.approx(100 * sum(other[k] - base[k] for k in common)
                                                                  / len(common))
        ps.append(float(cells["p"][0]["data-v"]))
        holms.append(float(cells["p_holm"][0]["data-v"]))
    assert {f for lab, f in seen if lab == "ug-random"} == {r["category"] for r in _store(dirs["oracle"])}
    assert {f for lab, f in seen if lab == "hand"} == {"l1_orientation", "l2_short_range", "l5_road_closure"}
    assert holms == pytest.approx(holm(ps)) and len(ps) == 10  # ug-random on the ten sub-families


def test_maps_and_chart(runs):
    t, text = runs["t"], runs["html"].read_text(encoding="utf-8")
    pngs = [s for s in t.imgs if s.startswith("data:image/png;base64,")]
    assert len(pngs) == len(t.imgs) == 1 + 3 * 2  # the SR-by-level chart, two maps for each of three runs
    assert "Success by level" in text and "© OpenStreetMap contributors" in text


# ------------------------------------------------------------------ small: duplicate ids, privileged note
def test_duplicate_task_id_is_an_error_naming_file_and_id(runs, tmp_path):
    suite = json.loads(runs["suite"].read_text())
    dup_id = suite["tasks"][1]["task_id"]
    suite["tasks"].append(dict(suite["tasks"][1]))
    bad = tmp_path / "dup.json"
    bad.write_text(json.dumps(suite))
    from urbanarena.errors import TaskFormatError

    with pytest.raises(TaskFormatError) as e:
        load_task_file(bad)
    n = len(suite["tasks"]) - 1
    assert str(e.value) == (f"{bad} [task {n} ({dup_id})]: duplicate task_id {dup_id!r}: task 1 has the same id "
                            "(task ids must be unique)")
    r = invoke("run", "--city", runs["city_dir"], "--tasks", bad, "--agent", "ug-random", "--out", tmp_path / "out")
    assert r.exit_code == 2 and "error:" in r.output and "duplicate task_id" in r.output and dup_id in r.output
    assert not (tmp_path / "out" / STORE_FILE).exists()
    # task sets from foreign loaders go through the same check
    from urbanarena.tasks.resolve import _check_tasks

    ts = list(runs["tasks"].values())
    with pytest.raises(TaskFormatError, match="duplicate task_id"):
        _check_tasks(ts + ts[:1], runs["city"], Path("foreign.json"))


def test_summary_marks_privileged_runs(runs):
    r = invoke("summary", runs["dirs"]["oracle"], "--resamples", 50)
    assert r.exit_code == 0, r.output
    notes = [ln for ln in r.output.splitlines() if "privileged" in ln]
    assert len(notes) == 1 and "agent ug-oracle" in notes[0] and notes[0].startswith("note: privileged run")
    r = invoke("summary", runs["dirs"]["random"], "--resamples", 50)
    assert r.exit_code == 0 and "privileged" not in r.output
