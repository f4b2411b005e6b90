"""lmms-eval: an urbanarena suite through lmms-eval's agentic output type ``generate_until_agentic``, with a
minimal scripted model of lmms-eval's own kind (a ``lmms_eval.api.model.lmms`` subclass).

Runs only where lmms-eval is installed: its own virtual environment (torch, transformers), as ``.ci/run``'s
lmms-eval step makes it. City and task as in test_harness_inspect: the cross with compass panoramas, the
cityseeker task s -> e; the script continues at s (A), continues at c and takes B (east), stops at e —
five rounds, trajectory s, c, e, TC-E 1. A second document cut off by ``max_agentic_steps`` is scored as
an errored failure.
"""

from __future__ import annotations

import json

import pytest

lmms_eval = pytest.importorskip("lmms_eval", reason="lmms-eval is not installed (its own venv: see .ci/run)")

from lmms_eval.api.model import lmms  # noqa: E402
from lmms_eval.evaluator import simple_evaluate  # noqa: E402
from lmms_eval.tasks import TaskManager  # noqa: E402

from urbanarena.harness import lmms as ua_lmms  # noqa: E402
from urbanarena.tasks.schema import CityRef, TaskFile  # noqa: E402
from urbanarena.world.city_io import save_city  # noqa: E402
from test_run_vlm_cityseeker import choice, stop  # noqa: E402
from vlm_util import cross_city, graph_task  # noqa: E402




class ScriptedLMM(lmms):
    """Answers CitySeeker stop requests (they show the panorama) and choice requests from two queues;
    records every context and the number of images it was shown."""

    is_simple = True

    def __init__(self, stops: list[str], choices: list[str]):
        super().__init__()
        self.queues = {"stop": list(stops), "choice": list(choices)}
        self.seen: list[tuple[str, int]] = []

    def generate_until(self, requests) -> list[str]:
        out = []
        for req in requests:
            context, _gen, doc_to_visual, doc_id, task, split = req.args
            visuals = doc_to_visual(self.task_dict[task][split][doc_id])
            self.seen.append((context, len(visuals)))
            q = self.queues["stop"] if "Panorama of the current place" in context else self.queues["choice"]
            out.append(q.pop(0) if q else "no reply left")
        return out

    # lmms-eval's base class declares these abstract; our task only issues generate_until requests, so a call
    # here is a wrong request type reaching the test model, not a missing feature
    def loglikelihood(self, requests):
        raise NotImplementedError("the scripted test model answers generate_until requests only")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("the scripted test model answers generate_until requests only")


@pytest.fixture()
def task_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ua_lmms.reset_sessions()
    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash),
                         tasks=[graph_task(city)]).save(tmp_path / "tasks.json")
    yield city_dir, task_file
    ua_lmms.reset_sessions()


def evaluate(folder, model):
    return simple_evaluate(model=model, tasks=[ua_lmms.TASK_NAME], task_manager=TaskManager(include_path=str(folder)),
                           log_samples=True, bootstrap_iters=0, process_docs_parallel=1)


def test_lmms_eval_runs_our_multi_step_episode(task_folder, tmp_path):
    city_dir, task_file = task_folder
    folder = ua_lmms.write_task_folder(str(city_dir), str(task_file), tmp_path / "lmms")
    model = ScriptedLMM([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)])
    res = evaluate(folder, model)
    assert len(model.seen) == 5
    # stop requests carry the panorama, choice requests one crop per offered heading (1, then 4)
    assert [n for _, n in model.seen] == [1, 1, 1, 4, 1]
    metrics = res["results"][ua_lmms.TASK_NAME]
    assert metrics["score,none"] == 1.0 and metrics["errored,none"] == 0.0
    [sample] = res["samples"][ua_lmms.TASK_NAME]
    final = json.loads(sample["resps"][0][0] if isinstance(sample["resps"][0], list) else sample["resps"][0])
    ep = final["urbanarena"]
    assert ep["stop_reason"] == "stop" and ep["protocol"] == "cityseeker-v1" and ep["rounds"] == 5
    assert ep["metrics"]["tc_exact"] == 1.0 and ep["steps"] == 3


def test_episode_cut_off_by_max_agentic_steps_scores_as_an_error(task_folder, tmp_path):
    city_dir, task_file = task_folder
    folder = ua_lmms.write_task_folder(str(city_dir), str(task_file), tmp_path / "lmms", max_rounds=2)
    model = ScriptedLMM([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)])
    res = evaluate(folder, model)
    assert len(model.seen) == 2  # lmms-eval asked twice, then stopped the loop
    metrics = res["results"][ua_lmms.TASK_NAME]
    assert metrics["errored,none"] == 1.0
    s = ua_lmms._SESSIONS["cs/1@0"]
    assert s.row["stop_reason"] == "error" and "max_agentic_steps" in s.row["error"]
    # scored as the failure it is: s -> c, never stopped at e
    assert s.row["metrics"]["tc_exact"] == 0.0 and s.row["trajectory"] == ["s", "c"]
