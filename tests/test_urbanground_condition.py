"""Weather / time of day in UrbanGround tasks: ``dynamics.condition`` is validated, stamped by the
generator (``--condition``) without changing anything else, and the runner shows image agents the
first-person view rendered in that condition."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from generate_util import fixture_city  # noqa: E402
from urbanarena.agents.base import Agent  # noqa: E402
from urbanarena.env.continuous.dynamics import DynamicsSpec  # noqa: E402
from urbanarena.errors import TaskFormatError, UrbanArenaError  # noqa: E402
from urbanarena.render.scene3d.context import gl_unavailable_reason  # noqa: E402
from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner  # noqa: E402
from urbanarena.tasks.generators.urbanground import generate_urbanground_suite  # noqa: E402


@pytest.fixture(scope="module")
def city():
    return fixture_city()


def test_condition_in_the_dynamics_spec():
    spec = DynamicsSpec.from_dict({"condition": "rain+dusk"})
    assert spec.condition == "rain+dusk" and spec.closures == () and spec.pedestrians is None
    assert DynamicsSpec.from_dict(spec.to_dict()) == spec
    assert "condition" not in DynamicsSpec.from_dict({}).to_dict()
    with pytest.raises(TaskFormatError, match="condition"):
        DynamicsSpec.from_dict({"condition": "nigth"})
    with pytest.raises(TaskFormatError, match="condition"):
        DynamicsSpec.from_dict({"condition": "rain+fog"})  # two weathers


def test_generator_stamps_the_condition_and_nothing_else(city):
    subs = ["l1_orientation", "l2_short_range"]
    clear = generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=subs)
    night = generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=subs, condition="night")
    assert night.report["condition"] == "night" and "condition" not in clear.report
    a = [t.model_dump() for t in clear.task_file.tasks]
    b = [t.model_dump() for t in night.task_file.tasks]
    assert len(a) == len(b) == 2
    for x, y in zip(a, b):
        assert y["extra"]["dynamics"]["condition"] == "night"
        dyn = dict(y["extra"]["dynamics"])
        dyn.pop("condition")
        y["extra"]["dynamics"] = dyn
        if not dyn:
            y["extra"].pop("dynamics")
        assert x == y
    with pytest.raises(UrbanArenaError, match="condition"):
        generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=subs, condition="snow")


class _LookOnce(Agent):
    """Looks at the first view, records its mean brightness, terminates."""

    name = "look-once"
    uses_images = True
    action_style = "continuous"
    seen: list = []

    def reset(self, task, context):
        pass

    def act(self, observation):
        _LookOnce.seen.append(float(np.asarray(observation["view"], float).mean()))
        return {"action": "terminate", "answer": "A"}


def test_runner_renders_the_task_condition(city):
    reason = gl_unavailable_reason()
    if reason:
        pytest.skip(f"GL renderer unavailable: {reason}")
    subs = ["l2_short_range"]
    clear = generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=subs).task_file.tasks[0]
    night = generate_urbanground_suite(city, per_family=1, seed=3, subfamilies=subs,
                                       condition="night").task_file.tasks[0]
    runner = ContinuousEpisodeRunner(city, _LookOnce, "look-once", view_size=(160, 90))
    _LookOnce.seen = []
    for t in (clear, night, clear):
        row = runner.run(t, 0, "urbanground-v1", 5)
        assert row["stop_reason"] == "terminate"
    day_mean, night_mean, day_again = _LookOnce.seen
    assert day_again == day_mean  # the clear observer is kept and deterministic
    assert night_mean < 0.6 * day_mean, (day_mean, night_mean)
