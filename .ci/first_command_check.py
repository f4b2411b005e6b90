"""First-command check: one VLM episode of each VLM agent kind through the installed ``urbanarena`` CLI.

Run by ``.ci/run`` inside a fresh virtual environment holding README's *first* command alone
(``pip install -e ".[all]"``: no test extra, no harness packages, which would bring packages such
as ``httpx`` back and hide an undeclared import). Each agent kind (``vlm-cityseeker``,
``vlm-arena``, ``vlm-urbanground``) runs one episode against the fake OpenAI-compatible server
and one against the fake Anthropic server of ``tests/fakes`` (real HTTP on 127.0.0.1, the real
SDKs), each through the ``urbanarena`` console script of that environment in a subprocess, as a
user would. The check fails unless every run exits 0 with ``0 agent errors`` and every fake
server answered at least one request.

Cities are tiny and synthetic (the T junction and cross of ``tests/arena_util.py`` with
compass panoramas, the OSM fixture ``tests/data/osm_generate_fixture.osm`` for the UrbanGround
ladder); the whole check takes a few seconds plus one GL render per UrbanGround step. Then one
``vlm-arena`` episode on the default city's default suite (``--tasks mini --limit 1``) in the
environment's home, which the demo filled (``URBANARENA_HOME``: the built city and the fetched photo
assets): it must run in the ``photo`` style (issue 24; ``run.json`` says so) and send the model a view.

Usage: ``PYTHONPATH=tests VENV/bin/python .ci/first_command_check.py VENV/bin/urbanarena WORKDIR``
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fakes import FakeAnthropicServer, FakeOpenAIServer
from vlm_util import cross_city, graph_task, reply, t_city

from urbanarena.tasks.schema import CityRef, TaskFile
from urbanarena.world.city_io import save_city

OPENAI_KEY = "sk-first-command-openai-0000"
ANTHROPIC_KEY = "sk-ant-first-command-0000"
FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "data" / "osm_generate_fixture.osm"


def _task_file(city, tasks, path: Path) -> Path:
    return TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=tasks).save(path)


def cityseeker_case(work: Path):
    city = cross_city(work / "cs")
    stop_now = json.dumps({"observation": "a street", "thoughts": "I am there", "action": 1})
    return save_city(city, work / "cs" / "city"), _task_file(city, [graph_task(city)], work / "cs" / "tasks.json"), \
        (lambda body, n: stop_now)


def arena_case(work: Path):
    city = t_city(work / "arena")
    ref = {"name": city.name, "content_hash": city.content_hash}
    tasks = {"format": "urbanarena-tasks", "schema_version": 1, "city": ref, "tasks": [
        {"task_id": "t/loc", "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
         "instruction": "Localise yourself on the grid map and answer as x:N y:M.", "answer": "x:1 y:2",
         "answer_metric": "exact_match", "category": "localization", "extra": {"task_kind": "localization"}}]}
    task_file = work / "arena" / "tasks.json"
    task_file.write_text(json.dumps(tasks), encoding="utf-8")
    return save_city(city, work / "arena" / "city"), task_file, \
        (lambda body, n: reply("ANSWER", "x:1 y:2", thought="the junction"))


def urbanground_case(work: Path):
    from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite
    from urbanarena.world.importers.osm import import_city

    city = import_city(str(FIXTURE))
    suite = generate_urbanground_suite(city, per_family=1, seed=0, subfamilies=["l2_short_range"])
    suite.task_file.tasks[:] = suite.task_file.tasks[:1]
    task_file = save_urbanground_suite(suite, work / "ug" / "tasks.json")
    return save_city(city, work / "ug" / "city"), task_file, (lambda body, n: json.dumps({"action": "terminate"}))


CASES = {"vlm-cityseeker": cityseeker_case, "vlm-arena": arena_case, "vlm-urbanground": urbanground_case}


def photo_episode(cli: str, work: Path, env: dict) -> str | None:
    """One vlm-arena episode of the default suite in the default (photo) style; ``None`` when it ran in
    ``photo`` with a view sent and no agent error, else what went wrong."""
    out = work / "run-vlm-arena-helsinki-photo"
    t0 = time.perf_counter()
    with FakeOpenAIServer(lambda body, n: reply("ANSWER", "x:1 y:1", thought="a street"), api_key=OPENAI_KEY) as srv:
        r = subprocess.run([cli, "run", "--city", "helsinki", "--tasks", "mini", "--limit", "1", "--agent", "vlm-arena",
                            "--model", f"openai-compatible:{srv.base_url}:fake-vlm", "--out", str(out)],
                           env=dict(env, OPENAI_COMPATIBLE_API_KEY=OPENAI_KEY), capture_output=True, text=True,
                           timeout=900)
        images = sum(json.dumps(rec.body).count("data:image/") for rec in srv.log)
    style = None
    if (out / "run.json").exists():
        run = json.loads((out / "run.json").read_text(encoding="utf-8"))
        views = [((c.get("extra") or {}).get("arena_view") or {}) for c in run.get("configs", {}).values()]
        style = views[0].get("render_style") if views else None
    ok = r.returncode == 0 and "0 agent errors" in r.stdout and images > 0 and style == "photo"
    print(f"{'ok  ' if ok else 'FAIL'} vlm-arena        helsinki mini, 1 episode: exit {r.returncode}, style {style}, "
          f"{images} images sent, {time.perf_counter() - t0:.1f} s")
    return None if ok else f"helsinki photo episode: exit {r.returncode}, style {style}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}"


def main(cli: str, work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OPENAI_API_KEY=OPENAI_KEY, ANTHROPIC_API_KEY=ANTHROPIC_KEY,
               URBANARENA_HOME=os.environ.get("URBANARENA_HOME") or str(work / "home"))
    env.pop("OPENAI_COMPATIBLE_API_KEY", None)
    failures = []
    t_all = time.perf_counter()
    for agent, make in CASES.items():
        city_dir, task_file, script = make(work)
        for provider, server, key in (("openai-compatible", FakeOpenAIServer, OPENAI_KEY),
                                      ("anthropic", FakeAnthropicServer, ANTHROPIC_KEY)):
            out = work / f"run-{agent}-{provider}"
            t0 = time.perf_counter()
            with server(script, api_key=key) as srv:
                if provider == "anthropic":
                    model = f"anthropic:{srv.base_url}:claude-first-command"
                else:
                    model = f"openai-compatible:{srv.base_url}:fake-vlm"
                    env["OPENAI_COMPATIBLE_API_KEY"] = key
                r = subprocess.run([cli, "run", "--city", str(city_dir), "--tasks", str(task_file), "--agent", agent,
                                    "--model", model, "--out", str(out)], env=env, capture_output=True, text=True,
                                   timeout=600)
                served = len(srv.log)
            ok = r.returncode == 0 and "0 agent errors" in r.stdout and served > 0
            print(f"{'ok  ' if ok else 'FAIL'} {agent:16s} {provider:18s} exit {r.returncode}, {served} requests, "
                  f"{time.perf_counter() - t0:.1f} s: {r.stdout.strip().splitlines()[-1:] or r.stderr.strip()[-300:]}")
            if not ok:
                log = out / "run.log"
                tail = log.read_text(encoding="utf-8", errors="replace")[-1500:] if log.exists() else ""
                failures.append(f"{agent} / {provider}: exit {r.returncode}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}\n{tail}")
    photo = photo_episode(cli, work, env)
    if photo:
        failures.append(photo)
    print(f"first-command check: {7 - len(failures)} passed, {len(failures)} failed "
          f"({time.perf_counter() - t_all:.1f} s)")
    for f in failures:
        print("----\n" + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
