"""Issue 15, defect 5: ``cityarena-v1`` follows 360CityArena's code where the paper and code meet it.

* the current-location map goes with every task kind but localization (the code's task loader,
  ``python/src/cityarena/tasks/loaders.py`` at a6ec8ed, sets ``requires_current_location`` so), not only
  with map navigation; ``urbanarena-v1`` keeps the task's own flag;
* an image over the provider's byte limit shrinks in 15 % steps (paper A.4) under ``cityarena-v1``;
* generation: 8,192 output tokens (the code's ``LLM_MAX_TOKENS`` default; the paper prints 8,096) and
  temperature 1.0 (paper A.4)."""

from __future__ import annotations

import pytest

from arena_util import t_junction
from urbanarena.env.protocols import get_protocol
from urbanarena.tasks.families.cityarena import TASK_KINDS, CityArenaFamily
from urbanarena.tasks.schema import CityRef, Start, Task


def _task(city, kind, flag):
    return Task(task_id=f"t/{kind}", family="cityarena", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node="s", heading_deg=0.0), instruction="x", answer="x:1 y:1",
                extra={"task_kind": kind, "requires_current_location": flag})


def test_location_map_rule():
    city = t_junction()
    for kind in TASK_KINDS:
        for flag in (False, True):
            t = _task(city, kind, flag)
            assert CityArenaFamily.sends_location_map(t, "cityarena-v1") is (kind != "localization"), kind
            assert CityArenaFamily.sends_location_map(t, "urbanarena-v1") is flag, kind


def test_downscale_step_and_generation():
    from urbanarena.agents.vlm.arena import ArenaReActAgent

    p = get_protocol("cityarena-v1").params
    assert p["generation"] == {"temperature": 1.0, "max_output_tokens": 8192}
    agent = ArenaReActAgent.__new__(ArenaReActAgent)
    assert agent.protocol_images("cityarena-v1") == {"downscale_step": 0.85}
    assert agent.protocol_images("urbanarena-v1") == {}


def test_the_client_shrinks_in_15_percent_steps(monkeypatch):
    import numpy as np

    from urbanarena.agents.vlm.arena import ArenaReActAgent
    from urbanarena.render.encode import encode_image

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    agent = ArenaReActAgent("openai:gpt-4.1-mini", cache="off")
    agent._ensure_client("cityarena-v1")
    assert agent.image_settings.downscale_step == 0.85
    agent._ensure_client("urbanarena-v1")
    assert agent.image_settings.downscale_step == 0.75  # the client default
    agent.close()
    mine = ArenaReActAgent("openai:gpt-4.1-mini", cache="off", images={"downscale_step": 0.5})
    mine._ensure_client("cityarena-v1")
    assert mine.image_settings.downscale_step == 0.5  # the user's setting wins
    mine.close()
    # what 15 % steps mean for an image over the byte limit: sides 400 -> 340 -> 289 -> ...
    img = np.random.default_rng(0).integers(0, 256, (400, 400, 3), dtype=np.uint8)  # noise: PNG cannot shrink it
    full = len(encode_image(img, "png").data)
    out = encode_image(img, "png", max_bytes=int(full * 0.5), step=0.85)
    k = next(k for k in range(1, 20) if out.width == int(400 * 0.85 ** k))
    assert k >= 2 and len(encode_image(img, "png", max_side=int(400 * 0.85 ** (k - 1))).data) > full * 0.5
