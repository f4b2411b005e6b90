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


def test_reply_reading_follows_the_reference_parser():
    from urbanarena.agents.vlm.parsing import parse_arena_reply

    body = '{"thought": "t", "action": "W", "memory": "", "answer": "LARGE"}'
    cases = {  # reply -> accepted under the reference reading (key_action_generator.extract_json_from_content)
        body: True,
        "```json\n" + body + "\n```": True,
        "```JSON\n" + body + "\n```": True,
        "```\n" + body + "\n```": False,  # an untagged fence: json.loads of the whole reply fails
        "Sure! " + body: False,
        body.replace('"W"', '"w"'): False,  # validate_action is case-sensitive
        body.replace('"action"', '"Action"'): False,
        body.replace('"W"', '"W MEDIUM"'): False,
        '{"thought": "t", "action": "W", "memory": "", "answer": "LARGE",}': False,  # trailing comma
    }
    for text, ok in cases.items():
        ref = parse_arena_reply(text, magnitude_out_of_range="default", empty_answer="accept", reading="reference")
        lenient = parse_arena_reply(text, magnitude_out_of_range="default", empty_answer="accept")
        assert lenient.action is not None, text
        assert (ref.action is not None) is ok, text
        if not ok:
            assert ref.failure == "reference_refused" and ref.repairs == [], text
    # the reference reads the size from "answer" only: a "magnitude" field is ignored (default size)
    r = parse_arena_reply('{"thought": "", "action": "W", "memory": "", "magnitude": "LARGE"}',
                          magnitude_out_of_range="default", empty_answer="accept", reading="reference")
    assert r.action is not None and r.action.magnitude is None and "magnitude_field_ignored" in r.notes
    assert get_protocol("cityarena-v1").params["reply_reading"] == "reference"
    assert "reply_reading" not in get_protocol("urbanarena-v1").params
