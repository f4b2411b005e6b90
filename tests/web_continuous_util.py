"""Helpers for the continuous-mode play / replay tests (``tests/test_web_continuous_*.py``).

The fixture city (``tests/data/osm_generate_fixture.osm``) is saved once per root and a small
UrbanGround suite is generated on it (seed 0, one task of each of ``l1_orientation`` -- the practice
question --, ``l2_short_range`` and ``l5_road_closure``); ``urbanarena run --agent ug-oracle`` on it gives,
per task, an action sequence that solves it and the row it stores. :func:`direct_run` applies an action
sequence to a fresh :class:`ContinuousEnv` (the environment alone, not the runner or the web layer).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from typer.testing import CliRunner

from generate_util import fixture_city

SUBFAMILIES = ["l1_orientation", "l2_short_range", "l5_road_closure"]


@lru_cache(maxsize=None)
def continuous_study(root: str) -> dict:
    """``{"city", "city_dir", "suite", "tasks" (category -> Task), "oracle_run", "oracle_rows" (task id -> row)}``."""
    from urbanarena.cli.main import app
    from urbanarena.runner.store import STORE_FILE, Store
    from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite
    from urbanarena.world.city_io import save_city

    base = Path(root)
    city = fixture_city()
    city_dir = base / "city"
    save_city(city, city_dir)
    suite = generate_urbanground_suite(city, per_family=1, seed=0, subfamilies=SUBFAMILIES)
    tasks = {t.category: t for t in suite.task_file.tasks}
    assert set(tasks) == set(SUBFAMILIES), sorted(tasks)
    task_file = base / "tasks" / "ug.json"
    task_file.parent.mkdir(parents=True, exist_ok=True)
    save_urbanground_suite(suite, task_file)
    oracle = base / "oracle-run"
    r = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_file), "--agent", "ug-oracle",
                                 "--out", str(oracle)])
    assert r.exit_code == 0, r.output
    dbs = list(oracle.rglob(STORE_FILE))
    assert len(dbs) == 1, dbs
    with Store(dbs[0], readonly=True) as s:
        rows = {row["task_id"]: row for row in s.rows()}
    return {"city": city, "city_dir": city_dir, "suite": task_file, "tasks": tasks, "oracle_run": dbs[0].parent,
            "oracle_rows": rows}


def direct_run(city, task, actions, observer=None):
    """Apply ``actions`` to a fresh env at the task's start (its own reset options and dynamics spec).

    Returns: ``(env, observations)`` -- the observation after reset and after every step (stops at the end).
    """
    from urbanarena.env.continuous import ContinuousEnv
    from urbanarena.tasks.families.urbanground import UrbanGroundFamily

    env = ContinuousEnv(city, observer=observer)
    opts = UrbanGroundFamily().env_options(task, city)
    opts["dynamics"] = (task.extra or {}).get("dynamics") or None
    obs, _ = env.reset(seed=0, options=opts)
    out = [obs]
    for a in actions:
        obs, _, done, _, _ = env.step(a)
        out.append(obs)
        if done:
            break
    return env, out


def goal_distance_m(city, task_json: dict, xy) -> float:
    """Straight-line metres from ``xy`` to the task's last goal, read from the task JSON."""
    pos = task_json["goals"][-1]["position"]
    gx, gy = city.frame.to_xy(pos["lat"], pos["lon"])
    return math.hypot(float(xy[0]) - float(gx), float(xy[1]) - float(gy))


#: map-mode actions played before the oracle's walk on the L2 task (they move nothing; 5 simulated seconds)
MAP_SCRIPT = [{"action": "open_map"}, {"action": "map_zoom", "factor": 0.5},
              {"action": "map_pan", "east": 20.0, "north": -10.0}, {"action": "map_select", "x": 0.25, "y": 0.75},
              {"action": "close_map"}]


def play_all(client, headers: dict, study: dict) -> dict:
    """Play every task of one participant through the HTTP API: consent, the practice question answered with
    its option's text, then each scored task with the ug-oracle's actions (the L2 walk after
    :data:`MAP_SCRIPT`). Returns ``{task_id: (actions sent, episode payloads shown, final state)}``."""
    from urbanarena.tasks.families.urbanground import UrbanGroundFamily

    fam = UrbanGroundFamily()
    by_prompt = {fam.prompt(t): t for t in study["tasks"].values()}
    oracle = study["oracle_rows"]
    assert client.post("/api/consent", headers=headers).json()["phase"] == "ready"
    played = {}
    while True:
        st = client.get("/api/state", headers=headers).json()
        if st["phase"] == "done":
            return played
        ep = client.post("/api/start", headers=headers).json()["episode"]
        task = by_prompt[ep["instruction"]]
        if task.category == "l1_orientation":
            actions = [{"action": "terminate", "answer": task.extra["options"][ord(str(task.answer)) - 65]}]
        else:
            actions = list(oracle[task.task_id]["actions"])
            if task.category == "l2_short_range":
                actions = MAP_SCRIPT + actions
        shown = [ep]
        for a in actions:
            r = client.post("/api/act", headers=headers, json={"seq": shown[-1]["seq"], "action": a})
            assert r.status_code == 200, r.text
            st = r.json()
            if st["phase"] != "episode":
                break
            shown.append(st["episode"])
        played[task.task_id] = (actions, shown, st)
