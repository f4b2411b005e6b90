"""Oracle demonstrations as supervised data (``urbanarena demos export``, docs/gym.md).

Each episode runs the privileged oracle of the task's mode through the registered env
(``Arena-v1`` for ``cityarena`` navigation kinds, ``Continuous-v1`` for ``urbanground``); at every step
the VLM agent of that mode (``vlm-arena`` / ``vlm-urbanground`` with its state inputs, one flat reply per
step) builds the request it would send to a model from the same observation -- system prompt, user text, images in order -- and is answered by
:class:`OracleReplyClient` with the oracle's action written as the protocol's reply JSON. The VLM agent
parses that reply with its own parser and its parsed action is what the env executes, so every row's
``reply`` is a reply the protocol accepts and means exactly the oracle's action (checked: a reply that
parses to another action raises :class:`DemoExportError`).

Free-text fields (ours): the oracle has no reasoning text, so ``thought`` is ``""``; ``memory`` is
``""`` (a blank memory keeps the previous one, so the memory shown in the prompts stays empty); the
``answer`` of arena replies carries the W/A/D/Q/E size as 360CityArena's reply format does, and the
oracle's own answer text for ANSWER (for navigation tasks "I have arrived.", never scored: their score is the final
position).

Any suite is accepted (``demos export --tasks mini`` included): the navigation kinds (cityarena
``map_navigation``, ``landmark_language``, ``landmark_image``, ``vln``; every urbanground sub-family,
its questions answered by the oracle) give **action demonstrations** as above; the answer-scored
cityarena kinds (``localization``, ``object_count``, ``relational``: question answering, which no
fixed-size ``Arena-v1`` action can carry) give **ground-truth answer turns** (ours): one row per
episode, the VLM agent's first request (``urbanarena run``'s arena runner, the same images) answered
with ANSWER and the task's expected answer as text (:func:`urbanarena.runner.answer_column.answer_text`);
the reply is parsed by the agent's own parser and the episode scored by the family's validator under
the protocol (checked: a reply that parses to another answer, or a ground truth that does not score 1,
raises :class:`DemoExportError`). Graph families (``cityseeker``, ``map2seq``) are refused.

A row per step: ``task_id``, ``seed``, ``split`` (the city's split area, or ``none``), ``city``,
``family``, ``kind`` (task kind or UrbanGround sub-family), ``protocol``, ``step`` (1-based),
``system``, ``prompt`` (the user turn's text parts joined by newlines, each image as ``<image>``),
``images`` (the user turn's images in order), ``image_labels`` (the text part before each image),
``reply`` (the JSON text), ``action`` (the executed action: arena label, or UrbanGround JSON),
``gym_action`` (the registered env's action as text: the ``Arena-v1`` index, or the ``Continuous-v1``
JSON; ``null`` for an answer turn, whose kind no registered env takes), ``done`` and ``score`` (the
episode's final score on its last row, else ``null``), ``turn`` (``action`` or ``answer``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from urbanarena.agents.base import AgentContext
from urbanarena.agents.clients import Image, ModelReply, Text
from urbanarena.agents.clients.spec import ModelSpec
from urbanarena.errors import RunIOError, UnsafePathError, UrbanArenaError
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

FORMATS = ("hf", "jsonl")
#: what a demonstrations folder holds besides ``<split>.jsonl`` files (a folder holding anything else is refused)
DEMO_ENTRIES = ("data", "images")
DEMO_MODEL = "oracle-demonstration"


class DemoExportError(UrbanArenaError):
    """A demonstration could not be exported exactly (the message names the task and step)."""


@dataclass
class OracleReplyClient:
    """A model client stand-in that answers every request with :attr:`reply` and keeps the last request."""

    reply: str = ""
    requests: list[Any] = field(default_factory=list)
    spec: ModelSpec = field(default_factory=lambda: ModelSpec("openai", DEMO_MODEL))

    def config(self) -> dict[str, Any]:
        return {"provider": "openai", "model": DEMO_MODEL, "generation": {}, "unsupported_settings": []}

    def complete(self, request, counters=None) -> ModelReply:
        self.requests.append(request)
        return ModelReply(text=self.reply, finish_reason="stop", requested_model=DEMO_MODEL)

    def close(self) -> None:
        pass


def arena_reply(action) -> str:
    """360CityArena's reply JSON for an :class:`~urbanarena.env.arena_env.ArenaAction` (module docstring)."""
    from urbanarena.env.arena_env import ActionKind

    if action.kind == ActionKind.ANSWER:
        answer = action.answer or ""
    else:
        answer = action.magnitude.value if action.magnitude is not None else ""
    return json.dumps({"thought": "", "action": action.kind.value, "memory": "", "answer": answer},
                      ensure_ascii=False)


def urbanground_reply(action: dict[str, Any]) -> str:
    """UrbanGround's reply JSON for an oracle action dict (module docstring)."""
    body = {k: v for k, v in action.items() if k != "memory"}
    return json.dumps({"thought": "", **body, "memory": ""}, ensure_ascii=False)


def _request_row(request) -> dict[str, Any]:
    texts, images, labels, last = [], [], [], ""
    for m in request.messages:
        for p in m.parts():
            if isinstance(p, Text):
                texts.append(p.text)
                last = p.text
            elif isinstance(p, Image):
                texts.append("<image>")
                images.append(np.asarray(p.array))
                labels.append(last)
    return {"system": request.system or "", "prompt": "\n".join(texts), "images": images, "image_labels": labels}


def _split_of(city: City) -> str:
    from urbanarena.tasks.generators.splits import city_area

    area = city_area(city)
    return area.split if area is not None else "none"


def _step(env, action, vlm, oracle) -> bool:
    """Step the env; both agents hear the outcome (``record_outcome``, as the runner's loop does); ended?"""
    _, _, term, trunc, _ = env.step(action)
    for agent in (vlm, oracle):
        if hasattr(agent, "record_outcome"):
            agent.record_outcome(env.last_info)
    return bool(term or trunc)


def arena_episode(city: City, task: Task, seed: int, task_dir: Path | None, protocol_id: str) -> Iterator[dict]:
    """Rows of one arena episode (module docstring)."""
    from urbanarena.agents.arena_oracle import ArenaOracleAgent
    from urbanarena.agents.vlm import ArenaReActAgent
    from urbanarena.gym.arena import ArenaTaskEnv, action_index

    env = ArenaTaskEnv(city=city, split=None, family=task.extra.get("task_kind"), protocol=protocol_id,
                       observation="rgb+map", tasks=[task], task_dir=task_dir)
    env.reset(seed=seed, options={"task": task})
    client = OracleReplyClient()
    oracle, vlm = ArenaOracleAgent(), ArenaReActAgent(client=client)
    ctx = dict(city=city, motion=env.arena.motion, seed=seed, protocol_id=protocol_id, task_id=task.task_id)
    oracle.reset(task, AgentContext(**ctx))
    vlm.reset(task, AgentContext(**ctx))
    done, step = False, 0
    while not done:
        raw = env.raw_obs
        want = oracle.act(raw)
        client.reply = arena_reply(want)
        got = vlm.act(raw)
        step += 1
        if got.label() != want.label():
            raise DemoExportError(f"task {task.task_id!r} step {step}: the reply {client.reply} parses to "
                                  f"{got.label()!r}, not the oracle's {want.label()!r}")
        a = action_index(got)
        done = _step(env, a, vlm, oracle)
        yield {**_request_row(client.requests[-1]), "step": step, "reply": client.reply, "action": got.label(),
               "gym_action": str(a), "done": bool(done),
               "score": float(env.score["evaluation_score"] or 0.0) if done else None, "turn": "action"}


def continuous_episode(city: City, task: Task, seed: int, protocol_id: str) -> Iterator[dict]:
    """Rows of one UrbanGround episode (module docstring)."""
    from urbanarena.agents.urbanground_oracle import UrbanGroundOracle
    from urbanarena.agents.vlm import UrbanGroundVLMAgent
    from urbanarena.gym.continuous import ContinuousTaskEnv

    env = ContinuousTaskEnv(city=city, split=None, family=str(task.category), protocol=protocol_id,
                            observation="rgb+map", tasks=[task])
    env.reset(seed=seed, options={"task": task})
    client = OracleReplyClient()
    oracle, vlm = UrbanGroundOracle(), UrbanGroundVLMAgent(client=client, inputs="state")  # flat replies, one per step
    dyn = env.env.world
    for agent in (oracle, vlm):
        ctx = AgentContext(city=city, motion=None, seed=seed, protocol_id=protocol_id,  # type: ignore[arg-type]
                           task_id=task.task_id)
        ctx.dynamics = dyn  # type: ignore[attr-defined]
        ctx.closures = list(dyn.closures) if dyn is not None else []  # type: ignore[attr-defined]
        agent.reset(task, ctx)
    done, step = False, 0
    while not done:
        raw = env.raw_obs
        want = oracle.act(raw)
        want = want.to_dict() if hasattr(want, "to_dict") else dict(want)
        client.reply = urbanground_reply(want)
        got = vlm.act(raw)
        step += 1
        body = {k: v for k, v in got.items() if k != "memory"}
        if body != {k: v for k, v in want.items() if k != "memory"}:
            raise DemoExportError(f"task {task.task_id!r} step {step}: the reply {client.reply} parses to {body}, "
                                  f"not the oracle's {want}")
        text = json.dumps(body, ensure_ascii=False)
        done = _step(env, text, vlm, oracle)
        yield {**_request_row(client.requests[-1]), "step": step, "reply": client.reply, "action": text,
               "gym_action": text, "done": bool(done), "score": float(env.score["sr"] or 0.0) if done else None,
               "turn": "action"}


def answer_turn(city: City, task: Task, seed: int, task_dir: Path | None, protocol_id: str) -> Iterator[dict]:
    """The one row of an answer-scored arena task: its ground-truth answer turn (module docstring)."""
    from urbanarena.agents.vlm import ArenaReActAgent
    from urbanarena.env.arena_env import ActionKind, ArenaAction
    from urbanarena.runner.arena import ArenaEpisodeRunner
    from urbanarena.runner.answer_column import answer_text
    from urbanarena.tasks.families import get_family

    truth = answer_text(task.answer)
    if not truth:
        raise DemoExportError(f"task {task.task_id!r}: a {task.extra.get('task_kind')} task without an answer")
    want = ArenaAction(ActionKind.ANSWER, answer=truth)
    client = OracleReplyClient(reply=arena_reply(want))
    row = ArenaEpisodeRunner(city, lambda: ArenaReActAgent(client=client), "ground-truth", task_dir=task_dir).run(
        task, seed, protocol_id, get_family(task.family).default_max_steps)
    score = (row.get("metrics") or {}).get("evaluation_score")
    if row.get("actions") != [want.label()] or len(client.requests) != 1:
        raise DemoExportError(f"task {task.task_id!r}: the reply {client.reply} gave the actions "
                              f"{row.get('actions')} (stop {row.get('stop_reason')!r}), not {want.label()!r}")
    if score != 1.0:
        raise DemoExportError(f"task {task.task_id!r}: its ground-truth answer {truth!r} scores {score} under "
                              f"{protocol_id} ({(row.get('metrics') or {}).get('message')})")
    yield {**_request_row(client.requests[-1]), "step": 1, "reply": client.reply, "action": want.label(),
           "gym_action": None, "done": True, "score": float(score), "turn": "answer"}


def demo_rows(city: City, tasks: list[Task], seeds: list[int], task_dir: Path | None,
              protocol: str | None = None) -> Iterator[dict[str, Any]]:
    """Rows of every (task, seed) episode (module docstring).

    Raises:
        DemoExportError: a task of a family without demonstrations here, or a reply that does not mean the
            oracle's action.
    """
    from urbanarena.gym.arena import FAMILIES as ARENA_KINDS
    from urbanarena.tasks.families import get_family

    split = _split_of(city)
    for task in tasks:
        fam = get_family(task.family)
        pid = protocol or fam.default_protocol
        if task.family == "cityarena" and task.extra.get("task_kind") in ARENA_KINDS:
            rows, kind = (lambda s: arena_episode(city, task, s, task_dir, pid)), str(task.extra.get("task_kind"))
        elif task.family == "cityarena":
            rows, kind = (lambda s: answer_turn(city, task, s, task_dir, pid)), str(task.extra.get("task_kind"))
        elif task.family == "urbanground":
            rows, kind = (lambda s: continuous_episode(city, task, s, pid)), str(task.category)
        else:
            raise DemoExportError(f"task {task.task_id!r}: demonstrations are exported for cityarena and "
                                  f"urbanground tasks, not {task.family} (graph families have no VLM-request "
                                  f"demonstrations here)")
        for seed in seeds:
            for row in rows(seed):
                yield {"task_id": task.task_id, "seed": int(seed), "split": split, "city": city.name,
                       "family": task.family, "kind": kind, "protocol": pid, **row}


def _png(img: np.ndarray) -> bytes:
    import io

    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.fromarray(np.asarray(img, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def export_demos(city: City, tasks: list[Task], out: str | Path, fmt: str = "hf", seeds: list[int] | None = None,
                 task_dir: Path | None = None, protocol: str | None = None) -> dict[str, Any]:
    """Write the demonstrations (module docstring) to ``out``.

    ``hf``: ``out/data/<split>-00000-of-00001.parquet`` with ``images`` as a ``datasets`` ``Sequence(Image())``,
    readable offline by ``datasets.load_dataset(str(out))`` (split named after the city's area: a train
    city writes the ``train`` split, so splits stay disjoint by construction). ``jsonl``:
    ``out/<split>.jsonl`` with the images as PNG files under ``out/images/`` (paths relative to ``out``).

    Returns: ``{"rows", "episodes", "split", "path", "action_rows", "action_episodes", "answer_turns"}``
    (rows of action demonstrations, their episodes, ground-truth answer turns).
    Raises:
        DemoExportError: see :func:`demo_rows`; ``out`` already holds this split.
        ValueError: unknown format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    out = Path(out)
    seeds = list(seeds or [0])
    split = _split_of(city)
    if out.exists() and not out.is_dir():
        raise UnsafePathError(f"--out {out}: exists and is a file, not a folder")
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in DEMO_ENTRIES and not p.name.endswith(".jsonl"))
        if foreign:
            raise UnsafePathError(f"--out {out}: a non-empty folder that is not a demonstrations export "
                                  f"(holds {', '.join(foreign[:3])}); give an absent or empty folder")
    counts = {"action_rows": 0, "action_episodes": 0, "answer_turns": 0}

    def counted_rows() -> Iterator[dict[str, Any]]:
        for r in demo_rows(city, tasks, seeds, task_dir, protocol):
            if r["turn"] == "answer":
                counts["answer_turns"] += 1
            else:
                counts["action_rows"] += 1
                counts["action_episodes"] += int(bool(r["done"]))
            yield r

    try:
        res = _write(out, fmt, split, counted_rows(), n_episodes=len(tasks) * len(seeds))
    except OSError as e:
        raise RunIOError(e.filename or out, e.strerror or str(e)) from e
    return {**res, **counts}


def _write_atomic(path: Path, write: Any) -> None:
    """``write(tmp)`` into a hidden temporary beside ``path``, then renamed to it (removed on failure)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write(out: Path, fmt: str, split: str, rows: Any, n_episodes: int) -> dict[str, Any]:
    if fmt == "jsonl":
        path = out / f"{split}.jsonl"
        if path.exists():
            raise DemoExportError(f"{path} exists: export each split once into a fresh folder")
        (out / "images").mkdir(parents=True, exist_ok=True)
        n = 0

        def write_jsonl(tmp: Path) -> None:
            nonlocal n
            with tmp.open("w", encoding="utf-8") as f:
                for r in rows:
                    names = []
                    for i, img in enumerate(r["images"]):
                        name = f"images/{split}-{n:07d}-{i}.png"
                        data = _png(img)
                        _write_atomic(out / name, lambda t, d=data: t.write_bytes(d))
                        names.append(name)
                    f.write(json.dumps({**r, "images": names}, ensure_ascii=False) + "\n")
                    n += 1
        _write_atomic(path, write_jsonl)
    else:
        import datasets

        path = out / "data" / f"{split}-00000-of-00001.parquet"
        if path.exists():
            raise DemoExportError(f"{path} exists: export each split once into a fresh folder")
        feats = datasets.Features({
            "task_id": datasets.Value("string"), "seed": datasets.Value("int64"), "split": datasets.Value("string"),
            "city": datasets.Value("string"), "family": datasets.Value("string"), "kind": datasets.Value("string"),
            "protocol": datasets.Value("string"), "system": datasets.Value("string"),
            "prompt": datasets.Value("string"), "images": datasets.Sequence(datasets.Image()),
            "image_labels": datasets.Sequence(datasets.Value("string")), "step": datasets.Value("int64"),
            "reply": datasets.Value("string"), "action": datasets.Value("string"),
            "gym_action": datasets.Value("string"), "done": datasets.Value("bool"),
            "score": datasets.Value("float64"), "turn": datasets.Value("string"),
        })
        recs = [{**r, "images": [{"bytes": _png(img), "path": None} for img in r["images"]]} for r in rows]
        n = len(recs)
        if not n:
            raise DemoExportError("no demonstration rows")
        path.parent.mkdir(parents=True, exist_ok=True)
        ds = datasets.Dataset.from_list(recs, features=feats)
        _write_atomic(path, lambda tmp: ds.to_parquet(str(tmp)))
    return {"rows": n, "episodes": n_episodes, "split": split, "path": str(path)}


__all__ = ["DemoExportError", "FORMATS", "OracleReplyClient", "arena_reply", "demo_rows", "export_demos",
           "urbanground_reply"]
