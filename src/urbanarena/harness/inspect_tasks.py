"""urbanarena tasks for inspect_ai (``pip install "urbanarena[inspect]"``; docs/harnesses.md).

Registered through the package's ``inspect_ai`` entry point (:mod:`urbanarena.harness.inspect_registry`)::

    inspect eval urbanarena/suite --model openai/gpt-4o -T city=helsinki -T tasks=mini -T limit=10
    inspect eval urbanarena/suite --model mockllm/model -T city=DIR -T tasks=FILE -T seeds=2
    inspect view                                   # the eval logs (./logs)

* **dataset** — one :class:`~inspect_ai.dataset.Sample` per (task, seed): id ``<task_id>@<seed>``,
  input the task's instruction, target its answer (or goal node), metadata task id, seed, family,
  category, difficulty and protocol id.
* **solver** (:func:`urbanarena_episode`) — our episode loop: the family's VLM agent
  (:data:`~urbanarena.harness.episodes.FAMILY_AGENT`) in the runner's env, its protocol building the
  prompts and parsing the replies, its model client a :class:`~urbanarena.harness.bridge.HarnessClient`
  whose every call goes to inspect_ai's model API (``get_model().generate``), so ``--model``, the
  providers, retries, ``--max-connections``, token usage and the transcript are inspect_ai's. The
  synchronous episode runs in a worker thread; each model call is awaited on inspect's event loop.
  The protocol's generation preset (temperature, max tokens) is passed as the call's config. A provider
  may drop or rename a setting (inspect's OpenAI provider sends no ``temperature`` to gpt-5 and o-series
  models, ``max_completion_tokens`` for ``max_tokens``, the system prompt as a ``developer`` message): after
  every call the request inspect actually sent (the transcript's ``ModelEvent.call.request``) is compared
  with the preset (:func:`generation_changes`); each change is logged once as a warning, and the episode's
  score metadata carries ``generation_sent`` and ``generation_changes`` (metric ``generation_changed``: the
  episodes with any change), so a run whose protocol settings did not reach the model is marked.
* **scorer** (:func:`urbanarena_scorer`) — the family scorer of :mod:`urbanarena.tasks.families` has
  scored the episode inside the loop; the score's value is the family's headline metric
  (:data:`~urbanarena.harness.episodes.HEADLINE_METRIC`), its metadata every metric, the protocol id,
  the stop reason and the error. Metrics: ``mean``, ``stderr``, :func:`episode_metrics` (the mean of
  every per-episode metric where it applies, and ``errored``, the episodes that ended in an error).
  An errored episode is scored as the failure it is (never dropped).
* **task metadata** — city, tasks, city content hash and the protocol ids, in the eval log's
  ``eval.metadata``.
"""

from __future__ import annotations

import base64
import math
from typing import Any

import anyio
import anyio.to_thread
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Target, mean, metric, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

import logging

from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript

from urbanarena.agents.clients import GenerationSettings
from urbanarena.harness.bridge import HarnessClient, HarnessReply, HarnessTurn
from urbanarena.harness.episodes import Suite, headline_score, numeric_metrics
from urbanarena.runner.episode import ERROR_STOP

#: inspect_ai stop reason -> our normalised finish reason
STOP_REASONS = {"stop": "stop", "max_tokens": "length", "model_length": "length", "content_filter": "refusal",
                "tool_calls": "tool_use"}
#: where the solver leaves the episode's result row (``TaskState.store``)
ROW_KEY = "urbanarena:row"


def _messages(system: str | None, turns: list[HarnessTurn]) -> list[ChatMessage]:
    out: list[ChatMessage] = [ChatMessageSystem(content=system)] if system else []
    for t in turns:
        if t.role == "assistant":
            out.append(ChatMessageAssistant(content="".join(p for p in t.parts if isinstance(p, str))))
            continue
        content: list[Content] = []
        for p in t.parts:
            if isinstance(p, str):
                content.append(ContentText(text=p))
            else:
                content.append(ContentImage(image=f"data:{p.media_type};base64,{base64.b64encode(p.data).decode()}"))
        out.append(ChatMessageUser(content=content))
    return out


log = logging.getLogger("urbanarena.harness")

#: request-body keys (OpenAI chat, OpenAI responses, Anthropic, most OpenAI-compatible servers) -> our setting
_SENT_KEYS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "reasoning_effort": "reasoning_effort",
              "max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens",
              "max_output_tokens": "max_output_tokens"}


def sent_generation(request: dict[str, Any] | None) -> dict[str, Any] | None:
    """The generation settings in a provider request body, under our names (``max_output_tokens`` whatever
    the provider calls it, with the provider's key in ``max_tokens_field``; ``reasoning.effort`` of the
    responses API as ``reasoning_effort``), plus ``system_role``: the role the system prompt went as
    (``system``, ``developer``, ``top-level`` for Anthropic's ``system`` field, ``None`` without one).
    ``None`` when the provider recorded no request (e.g. inspect's ``mockllm``)."""
    if not isinstance(request, dict):
        return None
    out: dict[str, Any] = {}
    for key, ours in _SENT_KEYS.items():
        if request.get(key) is not None:
            out[ours] = request[key]
            if ours == "max_output_tokens":
                out["max_tokens_field"] = key
    if isinstance(request.get("reasoning"), dict) and request["reasoning"].get("effort") is not None:
        out["reasoning_effort"] = request["reasoning"]["effort"]
    role = "top-level" if request.get("system") else None
    for m in request.get("messages") or request.get("input") or []:
        if isinstance(m, dict) and m.get("role") in ("system", "developer"):
            role = m["role"]
            break
    out["system_role"] = role
    return out


def generation_changes(intended: GenerationSettings, sent: dict[str, Any] | None, had_system: bool) -> list[str]:
    """How the request that went out differs from the protocol's settings: one line per setting the
    provider dropped (``"temperature 1.0 dropped"``), changed (``"max_output_tokens 2048 sent as 1024"``),
    and the system prompt sent under another role. ``[]`` when they agree or nothing was recorded."""
    if sent is None:
        return []
    out = []
    for name in ("temperature", "top_p", "seed", "reasoning_effort", "max_output_tokens"):
        want = getattr(intended, name)
        if want is None:
            continue
        got = sent.get(name)
        if got is None:
            out.append(f"{name} {want} dropped")
        elif (float(got) != float(want)) if isinstance(want, (int, float)) and isinstance(got, (int, float)) else got != want:
            out.append(f"{name} {want} sent as {got}")
    if had_system and sent.get("system_role") not in ("system", "top-level"):
        out.append(f"system prompt sent as {sent.get('system_role') or 'no'} message")
    return out


def _config(settings: GenerationSettings) -> GenerateConfig:
    return GenerateConfig(max_tokens=settings.max_output_tokens, temperature=settings.temperature,
                          top_p=settings.top_p, seed=settings.seed, reasoning_effort=settings.reasoning_effort)


def inspect_generate(model: Model):
    """A :data:`~urbanarena.harness.bridge.GenerateFn` that calls ``model`` on inspect's event loop from
    the episode's worker thread (``anyio.from_thread.run``)."""

    def generate(system: str | None, turns: list[HarnessTurn], settings: GenerationSettings) -> HarnessReply:
        output, request = anyio.from_thread.run(_generate, model, _messages(system, turns), _config(settings))
        usage = output.usage
        sent = sent_generation(request)
        return HarnessReply(
            text=output.completion, finish_reason=STOP_REASONS.get(output.stop_reason, "other"),
            raw_finish_reason=output.stop_reason,
            input_tokens=usage.input_tokens if usage else None, output_tokens=usage.output_tokens if usage else None,
            reasoning_tokens=usage.reasoning_tokens if usage else None, model=output.model or None,
            extra={"generation_sent": sent, "generation_changes": generation_changes(settings, sent, bool(system))})

    return generate


async def _generate(model: Model, messages: list[ChatMessage],
                    config: GenerateConfig) -> tuple[ModelOutput, dict[str, Any] | None]:
    """The model's output and the request body the provider sent for it (``None`` when not recorded)."""
    output = await model.generate(messages, config=config)
    request = None
    for event in reversed(transcript().events):
        if isinstance(event, ModelEvent):
            if event.output is not None and event.output.completion == output.completion and event.call is not None:
                request = event.call.request
            break
    return output, request


def _compact(row: dict[str, Any]) -> dict[str, Any]:
    """The result row without the per-step agent trace (the transcript holds every call)."""
    out = dict(row)
    stats = dict(out.get("agent_stats") or {})
    stats.pop("trace", None)
    out["agent_stats"] = stats
    out.pop("memory", None)
    return out


@solver
def urbanarena_episode(suite: Suite, agent: str | None = None, agent_params: dict[str, Any] | None = None,
                       protocol: str | None = None, max_steps: int | None = None) -> Solver:
    """Run the sample's episode with our loop; the model is inspect_ai's active model (module docstring)."""
    by_id = {t.task_id: t for t in suite.tasks}

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        client = HarnessClient(inspect_generate(model), str(model), harness="inspect_ai")
        t = by_id[state.metadata["task_id"]]
        seed = int(state.metadata["seed"])
        row = await anyio.to_thread.run_sync(
            lambda: suite.run_episode(t, seed, client, agent=agent, agent_params=agent_params, protocol=protocol,
                                      max_steps=max_steps))
        row = _compact(row)
        row["generation_sent"] = client.generation_sent
        row["generation_changes"] = sorted(client.generation_changes)
        state.store.set(ROW_KEY, row)
        answer = (row.get("details") or {}).get("answer") if isinstance(row.get("details"), dict) else None
        text = f"stop_reason={row['stop_reason']} steps={row['steps']} trajectory_end={row['trajectory'][-1] if row['trajectory'] else None}"
        if answer is not None:
            text += f" answer={answer}"
        state.output = ModelOutput.from_content(model=str(model), content=text)
        state.completed = True
        return state

    return solve


@metric
def episode_metrics() -> Metric:
    """Mean of every per-episode metric over the episodes where it applies (``None`` left out), and
    ``errored``: the count of episodes that ended in an agent or environment error; ``generation_changed``:
    the count of episodes where the provider dropped or changed a protocol setting (module docstring)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        errored = 0
        for s in scores:
            md = s.score.metadata or {}
            errored += int(md.get("stop_reason") == ERROR_STOP)
            for k, v in (md.get("metrics") or {}).items():
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    sums[k] = sums.get(k, 0.0) + float(v)
                    counts[k] = counts.get(k, 0) + 1
        out = {k: sums[k] / counts[k] for k in sorted(sums)}
        out["errored"] = float(errored)
        out["generation_changed"] = float(sum(1 for s in scores if (s.score.metadata or {}).get("generation_changes")))
        return out

    return compute


@scorer(metrics=[mean(), stderr(), episode_metrics()])
def urbanarena_scorer():
    """Score from the family scorer's metrics of the episode the solver ran (module docstring)."""

    async def score(state: TaskState, target: Target) -> Score:
        row = state.store.get(ROW_KEY)
        if row is None:
            raise RuntimeError(f"sample {state.sample_id!r}: the urbanarena_episode solver left no result")
        err = row.get("error")
        return Score(
            value=headline_score(row),
            answer=state.output.completion,
            explanation=f"{row['stop_reason']}" + (f": {str(err).splitlines()[0]}" if err else ""),
            metadata={"family": row["family"], "protocol": row["protocol"], "stop_reason": row["stop_reason"],
                      "error": err, "steps": row["steps"], "metrics": numeric_metrics(row),
                      "generation_sent": row.get("generation_sent"),
                      "generation_changes": row.get("generation_changes") or []},
        )

    return score


def samples(suite: Suite, seeds: int = 1, seed_base: int = 0, protocol: str | None = None) -> list[Sample]:
    """One sample per (seed, task), seeds outermost as ``urbanarena run`` orders its jobs."""
    out = []
    for seed in range(int(seed_base), int(seed_base) + int(seeds)):
        for t in suite.tasks:
            target = t.answer if t.answer is not None else ",".join(g.node or g.label or "" for g in t.goals)
            out.append(Sample(
                id=f"{t.task_id}@{seed}", input=t.instruction or t.task_id, target=str(target),
                metadata={"task_id": t.task_id, "seed": seed, "family": t.family, "category": t.category,
                          "difficulty": t.difficulty, "protocol": suite.protocol(t, protocol)}))
    return out


@task
def suite(city: str = "helsinki", tasks: str = "default", family: str | None = None, limit: int | None = None,
          seeds: int = 1, seed_base: int = 0, agent: str | None = None, protocol: str | None = None,
          max_steps: int | None = None, params: dict[str, Any] | None = None) -> Task:
    """An urbanarena suite as an inspect_ai task (``-T city=... -T tasks=...``).

    Args:
        city: CITY as ``urbanarena run --city`` (a name in the cache, a saved city folder, ``KIND:PATH``).
        tasks: TASKS as ``urbanarena run --tasks`` (``default``, ``mini``/``standard``/``full``, a task
            file, ``KIND:PATH``).
        family: keep only this task family. limit: the first ``limit`` tasks.
        seeds / seed_base: seeds ``seed_base .. seed_base + seeds - 1``.
        agent: VLM agent (default: the family's, ``FAMILY_AGENT``). protocol: protocol id (default: each
            family's). max_steps: step limit (default: each family's). params: further agent parameters.
    """
    s = Suite.load(city, tasks, limit=limit, family=family)
    data = samples(s, seeds, seed_base, protocol)
    return Task(
        dataset=MemoryDataset(data, name=f"urbanarena:{s.city.name}:{tasks}"),
        solver=urbanarena_episode(s, agent=agent, agent_params=params, protocol=protocol, max_steps=max_steps),
        scorer=urbanarena_scorer(),
        metadata={"urbanarena": {"city": s.city.name, "city_spec": city, "city_hash": s.city.content_hash,
                                 "tasks": tasks, "protocols": sorted({str(x.metadata["protocol"]) for x in data}),
                                 "families": sorted({t.family for t in s.tasks})}},
    )


__all__ = ["episode_metrics", "generation_changes", "inspect_generate", "sent_generation", "samples", "suite", "urbanarena_episode", "urbanarena_scorer"]
