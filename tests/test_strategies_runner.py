"""``urbanarena run --strategy/--rounds``: refusals, config hashing and records, crash-safe resume
with rounds (SIGKILL inside a store commit, then resume: no lost or duplicated rounds), and the
strategies on the real HongKong_6 graph with the baseline agents (B2 with random and forward)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from runner_util import write_inputs
from urbanarena.agents.strategies import STRATEGIES, StrategyError, check_applicable, parse_strategies
from urbanarena.agents.baselines import ForwardAgent, RandomAgent
from urbanarena.agents.oracle import OracleAgent
from urbanarena.cli.main import app
from urbanarena.runner.config import EpisodeConfig
from urbanarena.runner.driver import RunRequest, execute, prepare
from urbanarena.runner.pool import AgentSpecError
from urbanarena.runner.store import KEY_COLUMNS, KILL_ENV, TIME_COLUMNS, Store

TESTS = Path(__file__).resolve().parent


def test_strategy_specs_and_refusals(tmp_path):
    assert [s.id for s in parse_strategies("r3, b1(theta=0.6)")] == ["B1", "R3"]
    assert parse_strategies("B1(theta=0.6)")[0].params == {"k": 3, "theta": 0.6}
    for bad, msg in (("B1,B3", "at most one backtracking"), ("Q7", "unknown strategy 'Q7'"), ("B1,B1", "twice"),
                     ("B1(k=0)", "k must be"), ("B1(theta=2)", "theta must be"), ("R2(radius=5)", "unknown parameter"),
                     ("B1(k=x)", "not a number"), ("B1(", "unbalanced"), ("B1,,R3", "empty item")):
        with pytest.raises(StrategyError, match=msg.replace("(", r"\(")):
            parse_strategies(bad)
    # what each baseline can use: B2 everywhere; B1/B3 need a confidence, the text strategies text
    for agent in (RandomAgent(), ForwardAgent(), OracleAgent()):
        check_applicable(agent, parse_strategies("B2"))
        for sid in ("B1", "B3", "C1", "C2", "R1", "R2", "R3", "M1"):
            with pytest.raises(StrategyError, match=rf"strategy {sid} .*agent '{agent.name}' does not"):
                check_applicable(agent, parse_strategies(sid))
    assert set(STRATEGIES) == {"B1", "B2", "B3", "C1", "C2", "R1", "R2", "R3", "M1"}
    # the CLI: bad input -> "error: ..." and exit 2, no run directory left
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=4, n_tasks=2)
    out = tmp_path / "run"
    for args, msg in ((["--strategy", "B1"], "strategy B1 (confidence backtracking) needs an agent that reports a "
                                              "confidence score per decision; agent 'random' does not"),
                      (["--rounds", "0"], "--rounds must be between 1 and"),
                      (["--strategy", "Z1"], "unknown strategy 'Z1'")):
        r = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_path), "--agent", "random",
                                     "--out", str(out), *args])
        assert r.exit_code == 2 and "error:" in r.output and msg in " ".join(r.output.split()), r.output
        assert not out.exists()


def test_config_hash_and_records(tmp_path):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=4, n_tasks=3)
    base = prepare(RunRequest(city=str(city_dir), tasks=str(task_path), agent="random", out=tmp_path / "a"))
    [cfg] = base.configs.values()
    assert "strategies" not in cfg.as_dict() and "rounds" not in cfg.as_dict()  # plain runs keep their hashes
    plain = EpisodeConfig(cfg.protocol_id, cfg.max_steps, cfg.agent_name, cfg.agent_config, cfg.family, cfg.city_hash,
                          cfg.family_version)
    assert plain.hash == cfg.hash
    req = RunRequest(city=str(city_dir), tasks=str(task_path), agent="random", out=tmp_path / "b", seeds=2,
                     strategy="b2", rounds=2, max_steps=10)
    p = prepare(req)
    [scfg] = p.configs.values()
    d = scfg.as_dict()
    assert scfg.hash != cfg.hash and d["rounds"] == 2 and d["strategies"]["spec"] == "B2(k=3)"
    assert d["strategies"]["privileged"] is True and d["strategies"]["items"][0]["uses"][0].startswith("ground-truth")
    one_round = prepare(RunRequest(city=str(city_dir), tasks=str(task_path), agent="random", out=tmp_path / "c",
                                   strategy="B2"))
    assert next(iter(one_round.configs)) not in (cfg.hash, scfg.hash)
    assert "--strategy b2 --rounds 2" in req.command_line()
    execute(p)
    meta = json.loads((tmp_path / "b" / "run.json").read_text())
    assert meta["strategies"]["spec"] == "B2(k=3)" and meta["rounds"] == 2 and meta["privileged"] is True
    with Store(tmp_path / "b" / "episodes.sqlite", readonly=True) as st:
        rows = list(st.rows())
        assert len(rows) == 6 and all(r["details"]["privileged"] and r["details"]["rounds"] == 2 for r in rows)
        assert st.configs()[0]["config"]["strategies"]["spec"] == "B2(k=3)"
        mem = st.memory_rows()
        for r in rows:
            mine = [m for m in mem if (m["task_id"], m["seed"]) == (r["task_id"], r["seed"])]
            assert [len([m for m in mine if m["round"] == k]) for k in (1, 2)] == [
                len(pr["trajectory"]) for pr in r["details"]["per_round"]]
            assert r["trajectory"] == r["details"]["per_round"][-1]["trajectory"]
    # a text strategy on an agent that reads no text is refused before anything is written
    with pytest.raises(AgentSpecError, match="strategy R3 .*agent 'forward' does not"):
        prepare(RunRequest(city=str(city_dir), tasks=str(task_path), agent="forward", out=tmp_path / "d",
                           strategy="R3"))
    assert not (tmp_path / "d").exists()


# ----------------------------------------------------------------- crash-safe resume with rounds
N_TASKS, N_SEEDS = 6, 2
TOTAL = N_TASKS * N_SEEDS


def _cmd(city_dir, task_path, out, workers=1):
    return [sys.executable, "-m", "urbanarena.cli.main", "run", "--city", str(city_dir), "--tasks", str(task_path),
            "--agent", "random", "--strategy", "B2", "--rounds", "2", "--seeds", str(N_SEEDS), "--max-steps", "12",
            "--workers", str(workers), "--out", str(out)]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def _snapshot(db: Path):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    eps = {}
    for r in con.execute("SELECT * FROM episodes"):
        key = tuple(r[k] for k in KEY_COLUMNS)
        assert key not in eps, f"duplicate episode {key}"
        eps[key] = {k: r[k] for k in r.keys() if k not in TIME_COLUMNS}
    mem = [tuple(r) for r in con.execute("SELECT * FROM strategy_memory ORDER BY config_hash, task_id, seed, round, step")]
    con.close()
    return eps, mem


def test_kill_mid_run_with_rounds_then_resume_loses_and_duplicates_no_round(tmp_path):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=5, n_tasks=N_TASKS)
    ref = CliRunner().invoke(app, _cmd(city_dir, task_path, tmp_path / "ref")[3:], catch_exceptions=False)
    assert ref.exit_code == 0, ref.output
    want_eps, want_mem = _snapshot(tmp_path / "ref" / "episodes.sqlite")
    assert len(want_eps) == TOTAL and {r["details"] and json.loads(r["details"])["rounds"] for r in want_eps.values()} == {2}

    run_dir = tmp_path / "crashy"
    db = run_dir / "episodes.sqlite"
    # killed inside the 4th commit: after the episode row and its memory rows are inserted, before COMMIT
    p = subprocess.run(_cmd(city_dir, task_path, run_dir), env=_env(**{KILL_ENV: "4"}), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    eps, mem = _snapshot(db)
    assert len(eps) == 3
    jobs = {(m[1], m[2]) for m in mem}  # (task_id, seed) of the memory rows
    assert jobs == {(k[0], k[1]) for k in eps}  # the killed job left neither its row nor its memory
    # resume with two worker processes: every job once, both rounds of each, identical to the reference
    p = subprocess.run(_cmd(city_dir, task_path, run_dir, workers=2), env=_env(), capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"{TOTAL - 3} episodes run, 3 skipped" in p.stdout
    eps, mem = _snapshot(db)
    assert eps == want_eps
    assert mem == want_mem
    rounds: dict[tuple, list[int]] = {}
    for m in mem:
        if m[5] == 0:  # step 0 of each round
            rounds.setdefault((m[1], m[2]), []).append(m[4])
    assert len(rounds) == TOTAL and all(sorted(v) == [1, 2] for v in rounds.values())


# ----------------------------------------------------------------- HongKong_6 (graph-only, real)
@pytest.fixture(scope="module")
def hk6_dir(shared_dir):
    d = shared_dir / "data" / "cityseeker" / "HongKong_6"
    if not (d / "connections.json.gz").is_file():
        pytest.skip("../shared/data/cityseeker/HongKong_6 not found")
    return d


def _hk6(hk6_dir, out, agent, strategy, **kw):
    req = RunRequest(city=f"cityseeker:{hk6_dir}", tasks=f"cityseeker:{hk6_dir / 'question.json'}", agent=agent,
                     out=out, strategy=strategy, **kw)
    p = prepare(req)
    execute(p)
    with Store(out / "episodes.sqlite", readonly=True) as st:
        rows, mem = list(st.rows()), st.memory_rows()
    return p, rows, mem, json.loads((out / "run.json").read_text())


def test_hk6_strategies_with_baselines_record_what_they_used(hk6_dir, tmp_path):
    for agent in ("random", "forward"):
        p, rows, mem, meta = _hk6(hk6_dir, tmp_path / agent, agent, "B2", seeds=2, limit=30)
        city = p.city
        assert len(rows) == 60 and meta["privileged"] is True
        used = meta["strategies"]["items"]
        assert [u["id"] for u in used] == ["B2"] and used[0]["privileged"] is True
        assert any("hop distance" in u for u in used[0]["uses"])
        by_id = {t.task_id: t for t in p.tasks}
        rev = city.graph.reverse(copy=True)
        hops_to: dict[str, dict] = {}
        fired = 0
        for r in rows:
            assert r["details"]["privileged"] is True and r["details"]["strategies"] == used
            assert len([m for m in mem if (m["task_id"], m["seed"]) == (r["task_id"], r["seed"])]) == len(r["trajectory"])
            goal = by_id[r["task_id"]].goals[-1].node  # cityseeker-v1 checks the final goal only
            if goal not in hops_to:
                hops_to[goal] = nx.single_source_shortest_path_length(rev, goal)
            hops = hops_to[goal]
            traj = r["trajectory"]
            for ev in r["agent_stats"]["strategy"]["events"]:
                i, j = ev["step"], ev["target_step"]
                assert i == j + 3 and traj[i] == ev["at"] and traj[j] == ev["target"]
                d = [hops.get(n, float("inf")) for n in traj[j:i + 1]]  # independent hop distances
                assert all(b >= a for a, b in zip(d, d[1:])), (r["task_id"], d)
                if ev["outcome"] == "reverted":
                    fired += 1
                    assert traj[i + 1:i + 1 + ev["cost_steps"]] == ev["plan"] and ev["plan"][-1] == ev["target"]
        assert fired >= 20, fired  # random and forward drift away from the goal often on a 3,601-node graph
    # oracle under urbanarena-graph-v1: every step decreases the distance, so B2 never fires; TC-E stays 100 %
    _, rows, _, _ = _hk6(hk6_dir, tmp_path / "oracle", "oracle", "B2", limit=20, protocol="urbanarena-graph-v1",
                         max_steps=60)
    assert all(r["tc_exact"] == 1.0 and r["agent_stats"]["strategy"]["events"] == [] for r in rows)
    # where a strategy needs what the baseline lacks, the run is refused before anything is written
    with pytest.raises(AgentSpecError, match="strategy B1 .*agent 'random'"):
        _hk6(hk6_dir, tmp_path / "refused", "random", "B1,R3")
    assert not (tmp_path / "refused").exists()
