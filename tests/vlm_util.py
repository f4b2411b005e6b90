"""Synthetic cities with compass-coloured panoramas and helpers for the VLM agent tests.

Every panorama is a 64 x 32 equirectangular image whose centre column faces
north (node ``heading_deg = 0``) and whose four 90-degree sectors have
distinct colours: north red, east green, south blue, west yellow (sector of
compass bearing ``b``: ``round(b / 90) mod 4``). A view or crop with a field
of view of at most 90 degrees centred on a cardinal bearing is one plain
colour, so the mean colour the fake server decodes tells which way the
camera looked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
from PIL import Image

from arena_util import cross, t_junction
from fakes import FakeAnthropicServer, FakeOpenAIServer
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.imagery import attach_panorama_folder

RED, GREEN, BLUE, YELLOW = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)
SECTOR_COLOURS = (RED, GREEN, BLUE, YELLOW)  # north, east, south, west
PANO_W, PANO_H = 64, 32
OPENAI_KEY = "sk-test-vlm-openai-5d1e0b"
ANTHROPIC_KEY = "sk-ant-test-vlm-9c4a72"
FAST_RETRY = {"max_retries": 3, "backoff_initial_s": 0.0, "jitter_frac": 0.0}


def compass_panorama() -> np.ndarray:
    """64 x 32 panorama, centre column north; column ``i`` (centre ``i + 0.5``) has bearing
    ``360 (i + 0.5) / 64 - 180`` and the colour of its 90-degree sector."""
    pano = np.zeros((PANO_H, PANO_W, 3), np.uint8)
    for i in range(PANO_W):
        bearing = (360.0 * (i + 0.5) / PANO_W - 180.0) % 360.0
        pano[:, i] = SECTOR_COLOURS[int(((bearing + 45.0) % 360.0) // 90.0)]
    return pano


def with_compass_panoramas(city, folder: Path):
    """Write one compass panorama per node (PNG) and attach the folder as the city's imagery."""
    folder.mkdir(parents=True, exist_ok=True)
    pano = compass_panorama()
    for n in city.graph.nodes:
        city.graph.nodes[n]["heading_deg"] = 0.0
        Image.fromarray(pano).save(folder / f"{n}.png")
    return attach_panorama_folder(city, folder, "{node}.png")


def t_city(tmp: Path):
    """The T junction of ``arena_util`` (stem s(0,-20) - j(0,0); arms w(-20,0), e(20,0)) with panoramas."""
    return with_compass_panoramas(t_junction(), tmp / "panos")


def cross_city(tmp: Path, *, panoramas: bool = True):
    """The 4-way cross of ``arena_util`` (c(0,0); arms n, e, s, w at 20 m) with walkable headings."""
    city = cross()
    raw = {"c": [0.0, 90.0, 180.0, 270.0], "n": [180.0], "s": [0.0], "e": [270.0], "w": [90.0]}
    for n, hs in raw.items():
        city.graph.nodes[n]["walkable_headings_raw"] = hs
        city.graph.nodes[n]["walkable_headings_deg"] = hs
        city.graph.nodes[n]["heading_deg"] = 0.0
    return with_compass_panoramas(city, tmp / "panos") if panoramas else city


def arena_task(city, *, answer: str | None = "x:1 y:2", metric: str | None = "exact_match", instruction: str = "",
               goal: str | None = None, task_id: str = "t/1") -> Task:
    return Task(task_id=task_id, family="arena", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node="s", heading_deg=0.0), goals=[Goal(node=goal)] if goal else [],
                instruction=instruction or "Find the grid cell of the junction and answer as x:N y:M.",
                answer=answer, answer_metric=metric)


def graph_task(city, goal: str = "e", start: str = "s", question: str = "I need a pharmacy.") -> Task:
    return Task(task_id="cs/1", family="cityseeker", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node=start, heading_deg=0.0), goals=[Goal(node=goal, label="pharmacy")],
                success_radius_m=50.0, instruction=question, reference_path=[start, "c", goal],
                category="basic_poi", difficulty="easy")


def reply(action: str, answer: str = "", memory: str = "", thought: str = "") -> str:
    """A well-formed arena reply (the JSON object only)."""
    return json.dumps({"thought": thought or f"doing {action}", "action": action, "memory": memory, "answer": answer})


def server(provider: str, script, **kw):
    """A started-on-enter fake server of ``provider`` (``openai`` / ``anthropic``) with the test key."""
    if provider == "openai":
        return FakeOpenAIServer(script, api_key=OPENAI_KEY, **kw)
    return FakeAnthropicServer(script, api_key=ANTHROPIC_KEY, **kw)


def spec(provider: str, srv, model: str | None = None) -> str:
    if provider == "openai":
        return f"openai:{srv.base_url}:{model or 'gpt-4o'}"
    return f"anthropic:{srv.base_url}:{model or 'claude-test-vlm'}"


def user_texts(rec) -> list[str]:
    """Text parts of the last user turn of a recorded request."""
    msgs = (rec.body or {}).get("messages", [])
    users = [m for m in msgs if m.get("role") == "user"]
    c = users[-1]["content"]
    return [c] if isinstance(c, str) else [p["text"] for p in c if p.get("type") == "text"]


def system_text(rec) -> str:
    b = rec.body or {}
    if isinstance(b.get("system"), str):
        return b["system"]
    for m in b.get("messages", []):
        if m.get("role") == "system":
            return m["content"] if isinstance(m["content"], str) else "".join(p.get("text", "") for p in m["content"])
    return ""


def roles(rec) -> list[str]:
    return [m["role"] for m in (rec.body or {}).get("messages", []) if m["role"] != "system"]


def phase_script(stop_replies: list[str], choice_replies: list[str]) -> Callable[[dict[str, Any], int], str]:
    """A script for CitySeeker-protocol requests: stop requests (with the panorama label) take the
    next stop reply, choice requests the next choice reply."""
    queues = {"stop": list(stop_replies), "choice": list(choice_replies)}

    def script(body: dict[str, Any], n: int):
        text = json.dumps(body.get("messages", []))
        q = queues["stop"] if "Panorama of the current place" in text else queues["choice"]
        return q.pop(0) if q else None

    return script


def strip_volatile(obj: Any) -> Any:
    """Drop keys that legitimately differ between identical runs (latency, timings, cost-free clocks)."""
    if isinstance(obj, dict):
        return {k: strip_volatile(v) for k, v in obj.items()
                if k not in ("latency_s", "timings", "started_at", "finished_at", "duration_s")}
    if isinstance(obj, list):
        return [strip_volatile(v) for v in obj]
    return obj
