"""urbanarena episodes as an lmms-eval task of output type ``generate_until_agentic`` (lmms-eval >= 0.7).

lmms-eval drives an agentic task from its side: each round it asks the model with the current text
context and images, then calls the task's ``doc_to_text(doc, previous_output=..., round_idx=...,
previous_round_info=...)``, which answers ``(visuals, next_context, terminal, outputs, round_info)``.
Our episode loop is the other way round (the agent calls the model), so each document's episode runs
in a thread of its own (:class:`EpisodeSession`) whose model client
(:class:`~urbanarena.harness.bridge.HarnessClient`) hands every request to lmms-eval and blocks until
the model's reply comes back through ``doc_to_text``. The agent's protocol still builds every prompt and
parses every reply; the family scorer scores the episode; lmms-eval sees one model call per round.

* **Documents** — one per (task, seed) in ``docs.jsonl`` of a task folder written by
  :func:`write_task_folder` (``python -m urbanarena.harness.lmms --city C --tasks T --out DIR``); run it
  with ``python -m lmms_eval --include_path DIR --tasks urbanarena_suite --model ...``.
* **Context** — the request flattened to text: the system prompt, then each turn (an earlier reply of the
  model as ``[your earlier reply] ...``), every image replaced by a marker ``[image k]`` and passed, in
  order, as the round's visuals (PIL images).
* **End** — when the episode ends the final output is the JSON result (``urbanarena`` key: task, seed,
  family, protocol, stop reason, error, steps, every metric); ``process_results`` scores it: ``score``
  (the family's headline metric, :data:`~urbanarena.harness.episodes.HEADLINE_METRIC`) and
  ``errored``. An episode still running when lmms-eval's ``max_agentic_steps`` runs out is stopped: its
  agent gets an error, the episode ends with stop reason ``error`` and is scored as the failure it is.

Sessions are kept per process in a registry keyed by the document (``task_id@seed``) and are safe to
create from several threads (lmms-eval builds requests in parallel).
"""

from __future__ import annotations

import argparse
import io
import json
import queue
import threading
from pathlib import Path
from typing import Any

from urbanarena.agents.clients import EncodedImage, GenerationSettings
from urbanarena.harness.bridge import HarnessClient, HarnessReply, HarnessTurn
from urbanarena.harness.episodes import Suite, headline_score, numeric_metrics

TASK_NAME = "urbanarena_suite"
#: rounds (model calls) an episode may take before lmms-eval stops it (the YAML's ``max_agentic_steps``)
DEFAULT_MAX_ROUNDS = 400
#: seconds an episode may take between two model calls (env steps, rendering) before it is declared hung
STEP_TIMEOUT_S = 600.0


class SessionAborted(RuntimeError):
    """Raised inside an episode's model call when lmms-eval stopped asking (rounds exhausted)."""


def _flatten(system: str | None, turns: list[HarnessTurn]) -> tuple[str, list[EncodedImage]]:
    lines: list[str] = [system] if system else []
    images: list[EncodedImage] = []
    for t in turns:
        parts: list[str] = []
        for p in t.parts:
            if isinstance(p, str):
                parts.append(p)
            else:
                images.append(p)
                parts.append(f"[image {len(images)}]")
        text = "\n".join(parts)
        lines.append(f"[your earlier reply] {text}" if t.role == "assistant" else text)
    return "\n\n".join(lines), images


def _pil(images: list[EncodedImage]) -> list[Any]:
    from PIL import Image

    out = []
    for im in images:
        with Image.open(io.BytesIO(im.data)) as pic:
            out.append(pic.convert("RGB"))
    return out


class EpisodeSession:
    """One document's episode in a thread, exchanging model calls with lmms-eval (module docstring)."""

    def __init__(self, suite: Suite, task_id: str, seed: int, *, protocol: str | None = None,
                 max_steps: int | None = None, model: str = "lmms-eval"):
        self.suite = suite
        self.task = next(t for t in suite.tasks if t.task_id == task_id)
        self.seed = int(seed)
        self._events: queue.Queue = queue.Queue()  # episode -> harness: ("ask", context, images) | ("done", row)
        self._replies: queue.Queue = queue.Queue()  # harness -> episode: reply text | SessionAborted
        self.pending: tuple[str, list[Any]] | None = None
        self.row: dict[str, Any] | None = None
        self.rounds = 0
        client = HarnessClient(self._generate, model, harness="lmms-eval")
        self._thread = threading.Thread(
            target=self._run, args=(client, protocol, max_steps), name=f"urbanarena-{task_id}@{seed}", daemon=True)
        self._thread.start()
        self._next()

    def _generate(self, system: str | None, turns: list[HarnessTurn], settings: GenerationSettings) -> HarnessReply:
        context, images = _flatten(system, turns)
        self._events.put(("ask", context, images))
        reply = self._replies.get()
        if isinstance(reply, BaseException):
            raise reply
        return HarnessReply(text=str(reply), finish_reason="stop")

    def _run(self, client: HarnessClient, protocol: str | None, max_steps: int | None) -> None:
        try:
            row = self.suite.run_episode(self.task, self.seed, client, protocol=protocol, max_steps=max_steps)
            self._events.put(("done", row))
        except BaseException as e:  # noqa: BLE001 - our own failures reach the harness as the episode's result
            self._events.put(("failed", e))

    def _next(self) -> None:
        try:
            event = self._events.get(timeout=STEP_TIMEOUT_S)
        except queue.Empty:
            raise RuntimeError(f"episode {self.task.task_id}@{self.seed}: no model call or end within "
                               f"{STEP_TIMEOUT_S:.0f} s") from None
        if event[0] == "ask":
            self.pending = (event[1], _pil(event[2]))
        elif event[0] == "done":
            self.pending, self.row = None, event[1]
        else:
            self.pending = None
            raise event[1]

    @property
    def done(self) -> bool:
        return self.row is not None

    def reply(self, text: str) -> None:
        """Hand the model's reply to the waiting agent and run the episode to its next call or its end."""
        if self.done:
            return
        self.rounds += 1
        self._replies.put(text)
        self._next()

    def abort(self) -> None:
        """End a still-running episode: its pending model call raises :class:`SessionAborted`."""
        if not self.done:
            self._replies.put(SessionAborted("lmms-eval's max_agentic_steps ran out before the episode ended"))
            self._next()

    def result_json(self) -> str:
        """The final output (module docstring)."""
        assert self.row is not None
        r = self.row
        return json.dumps({"urbanarena": {
            "task_id": r["task_id"], "seed": r["seed"], "family": r["family"], "protocol": r["protocol"],
            "stop_reason": r["stop_reason"], "error": (str(r["error"]).splitlines()[0] if r.get("error") else None),
            "steps": r["steps"], "rounds": self.rounds, "score": headline_score(r), "metrics": numeric_metrics(r)}},
            sort_keys=True)


_LOCK = threading.Lock()
_SUITES: dict[tuple[str, str], Suite] = {}
_SESSIONS: dict[str, EpisodeSession] = {}


def _kwargs(lmms_eval_specific_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    kw = dict(lmms_eval_specific_kwargs or {})
    if "city" not in kw or "tasks" not in kw:
        raise ValueError("the urbanarena task's lmms_eval_specific_kwargs need 'city' and 'tasks' "
                         "(write the task folder with python -m urbanarena.harness.lmms)")
    return kw


def session_for(doc: dict[str, Any], kw: dict[str, Any]) -> EpisodeSession:
    """The document's session (started on first use)."""
    key = f"{doc['task_id']}@{int(doc['seed'])}"
    with _LOCK:
        s = _SESSIONS.get(key)
        if s is None:
            suite = _SUITES.get((kw["city"], kw["tasks"]))
            if suite is None:
                suite = _SUITES[(kw["city"], kw["tasks"])] = Suite.load(kw["city"], kw["tasks"])
            s = _SESSIONS[key] = EpisodeSession(suite, doc["task_id"], int(doc["seed"]), protocol=kw.get("protocol"),
                                                max_steps=kw.get("max_steps"), model=str(kw.get("model", "lmms-eval")))
        return s


def doc_to_visual(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> list[Any]:
    """The images of the document's pending model call (its first, before any round)."""
    s = _SESSIONS.get(f"{doc['task_id']}@{int(doc['seed'])}")
    return list(s.pending[1]) if s is not None and s.pending is not None else []


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None,
                previous_output: list[str] | None = None, round_idx: int | None = None,
                previous_round_info: dict[str, Any] | None = None):
    """lmms-eval's agentic callback (module docstring): the first context, then one episode step per round."""
    s = session_for(doc, _kwargs(lmms_eval_specific_kwargs))
    if round_idx is None:  # the first context (asked again while no reply came: the same prompt)
        return s.pending[0] if s.pending is not None else ""
    if s.rounds < int(round_idx):
        s.reply(previous_output[-1] if previous_output else "")
    info = {"session": f"{s.task.task_id}@{s.seed}", "rounds": s.rounds}
    if s.done:
        return None, None, True, [*(previous_output or []), s.result_json()], info
    return s.pending[1], s.pending[0], False, None, info  # type: ignore[index]


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    """Score the document from its final output; a session cut off by ``max_agentic_steps`` is aborted
    first (its episode scored as an error)."""
    raw = results[0] if results else ""
    payload = None
    try:
        payload = json.loads(raw).get("urbanarena") if isinstance(raw, str) else None
    except (json.JSONDecodeError, AttributeError):
        payload = None
    if payload is None:
        s = _SESSIONS.get(f"{doc['task_id']}@{int(doc['seed'])}")
        if s is None:
            return {"score": 0.0, "errored": 1.0}
        s.abort()
        payload = json.loads(s.result_json())["urbanarena"]
    return {"score": float(payload["score"]), "errored": float(payload["stop_reason"] == "error")}


def mean(values: list[float]) -> float:
    """Aggregation of the per-document values (plain mean)."""
    return sum(values) / len(values) if values else 0.0


def reset_sessions() -> None:
    """Forget every session and loaded suite of this process (tests; a new evaluation)."""
    with _LOCK:
        for s in _SESSIONS.values():
            if not s.done:
                s._replies.put(SessionAborted("sessions reset"))
        _SESSIONS.clear()
        _SUITES.clear()


YAML = """# urbanarena suite for lmms-eval (written by python -m urbanarena.harness.lmms; docs/harnesses.md)
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
task: {task}
test_split: test
output_type: generate_until_agentic
doc_to_visual: !function utils.doc_to_visual
doc_to_text: !function utils.doc_to_text
doc_to_target: instruction
generation_kwargs:
  max_new_tokens: {max_new_tokens}
  temperature: 0
  do_sample: false
  max_agentic_steps: {max_rounds}
process_results: !function utils.process_results
metric_list:
  - metric: score
    aggregation: !function utils.mean
    higher_is_better: true
  - metric: errored
    aggregation: !function utils.mean
    higher_is_better: false
lmms_eval_specific_kwargs:
  default: {kwargs}
metadata:
  - version: 1
    protocols: {protocols}
"""

UTILS = '''"""lmms-eval shim: the urbanarena task's functions (urbanarena.harness.lmms)."""
from urbanarena.harness.lmms import doc_to_text, doc_to_visual, mean, process_results  # noqa: F401
'''


def write_task_folder(city: str, tasks: str, out_dir: str | Path, *, seeds: int = 1, seed_base: int = 0,
                      limit: int | None = None, family: str | None = None, protocol: str | None = None,
                      max_steps: int | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS,
                      task_name: str = TASK_NAME) -> Path:
    """Write an lmms-eval task folder (``<task_name>.yaml``, ``utils.py``, ``docs.jsonl``) for a suite.

    ``max_new_tokens`` is the largest output-token preset of the suite's protocols (every family's VLM
    agent preset). Returns the folder. Raises what :meth:`Suite.load` raises.
    """
    from urbanarena.agents.registry import make_agent
    from urbanarena.harness.episodes import FAMILY_AGENT

    suite = Suite.load(city, tasks, limit=limit, family=family)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    docs = out / "docs.jsonl"
    protocols: set[str] = set()
    max_tokens = 0
    with docs.open("w", encoding="utf-8") as f:
        for seed in range(int(seed_base), int(seed_base) + int(seeds)):
            for t in suite.tasks:
                pid = suite.protocol(t, protocol)
                protocols.add(pid)
                f.write(json.dumps({"task_id": t.task_id, "seed": seed, "family": t.family, "protocol": pid,
                                    "instruction": t.instruction}) + "\n")
    for t in suite.tasks:
        probe = make_agent(FAMILY_AGENT[t.family], client=HarnessClient(lambda *a: None, "probe"))  # type: ignore[arg-type]
        gen = GenerationSettings(**probe.protocol_generation(suite.protocol(t, protocol)))
        max_tokens = max(max_tokens, gen.max_output_tokens)
    kw = {"city": city, "tasks": tasks, **({"protocol": protocol} if protocol else {}),
          **({"max_steps": int(max_steps)} if max_steps is not None else {})}
    (out / f"{task_name}.yaml").write_text(YAML.format(
        docs=json.dumps(str(docs.absolute())), task=task_name, max_new_tokens=max_tokens, max_rounds=int(max_rounds),
        kwargs=json.dumps(kw), protocols=json.dumps(sorted(protocols))), encoding="utf-8")
    (out / "utils.py").write_text(UTILS, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m urbanarena.harness.lmms --city C --tasks T --out DIR [--seeds N] [--limit N]``."""
    ap = argparse.ArgumentParser(prog="python -m urbanarena.harness.lmms",
                                 description="Write an lmms-eval task folder for an urbanarena suite.")
    ap.add_argument("--city", required=True)
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed-base", type=int, default=0)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--family")
    ap.add_argument("--protocol")
    ap.add_argument("--max-steps", type=int)
    ap.add_argument("--max-rounds", type=int, default=DEFAULT_MAX_ROUNDS)
    a = ap.parse_args(argv)
    out = write_task_folder(a.city, a.tasks, a.out, seeds=a.seeds, seed_base=a.seed_base, limit=a.limit,
                            family=a.family, protocol=a.protocol, max_steps=a.max_steps, max_rounds=a.max_rounds)
    print(f"{out}: python -m lmms_eval --include_path {out} --tasks {TASK_NAME} --model MODEL --model_args ...")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = ["EpisodeSession", "TASK_NAME", "doc_to_text", "doc_to_visual", "process_results", "write_task_folder"]
