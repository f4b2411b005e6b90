"""What the VLM agents share: the model client, prompt templates, counters and the config.

Parameters common to every VLM agent (registry / ``-p KEY=VALUE``):

=====================  =====================================================
``model``              model spec string (``openai:gpt-4o``,
                       ``openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-vl``,
                       ``anthropic:claude-...``; see ``docs/model-clients.md``)
``generation``         dict of :class:`GenerationSettings` fields; they
                       override the protocol's preset field by field
``images``             dict of :class:`ImageSettings` fields
``prompt_templates``   a folder of ``<name>.txt`` files or ``{name: path}``
                       (:mod:`urbanarena.agents.prompts`)
``cache``              ``off`` (default), ``read-write`` or ``read-only``
``cache_path``         the response-cache SQLite file (required unless ``off``)
``max_usd`` /          caps of a :class:`BudgetGuard`; give ``budget_ledger``
``max_requests``       (a SQLite file) so the caps hold across episodes and
                       worker processes, otherwise they hold per agent object
``budget_ledger``      the budget ledger file
``timeout_s``          per-request timeout (seconds)
``retry``              dict of :class:`RetryPolicy` fields
``api_key_env``        name of the variable holding the API key (else the
                       provider's default variable)
``control``            control mode (:class:`~urbanarena.agents.controls.ControlMode`,
                       its fields as a dict, or a name such as ``"blind"``):
                       pictures withheld or replaced by text; in ``config()``
                       under ``control`` when not normal
=====================  =====================================================

A ready :class:`ModelClient` may be passed as ``client`` instead (tests,
or a runner sharing one client); the agent then uses the client's own
settings and never closes it.

Call indices: every model call of an episode gets a distinct
``ModelRequest.sample_index`` = ``((seed mod 2**32) * 100000 + step) * 100 +
phase * 10 + attempt``, so the response cache never serves one call's reply
to another (another seed, a revisited node, a re-request of the same
prompt), while a resumed or replayed episode makes exactly the same calls and
finds them all in the cache.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.agents.clients import (
    BudgetGuard,
    GenerationSettings,
    ImageSettings,
    Message,
    ModelClient,
    ModelReply,
    ModelRequest,
    ResponseCache,
    RetryPolicy,
    UsageCounters,
    make_client,
    parse_model_spec,
)
from urbanarena.agents.clients.cache import CACHE_MODES
from urbanarena.agents.controls import ControlMode
from urbanarena.agents.prompts import PromptTemplate, load_templates, templates_hash
from urbanarena.agents.vlm.parsing import MemoryReply, echo_text

#: bump when request-building code (labels, layout) changes the text sent
REQUEST_LAYOUT_VERSION = 1


def call_index(seed: int, step: int, attempt: int, phase: int = 0) -> int:
    """The ``sample_index`` of one model call (module docstring).

    Args:
        seed: episode seed (any int; taken mod 2**32).
        step: 1-based step of the episode (< 100000).
        attempt: 0 for the first request of a step/phase, then 1, 2, ... (< 10).
        phase: 0 (arena, CitySeeker stop) or 1 (CitySeeker choice) (< 10).
    Raises:
        ValueError: an argument out of range.
    """
    if not (0 <= step < 100_000 and 0 <= attempt < 10 and 0 <= phase < 10):
        raise ValueError(f"call index out of range: step={step}, attempt={attempt}, phase={phase}")
    return ((int(seed) % (1 << 32)) * 100_000 + int(step)) * 100 + int(phase) * 10 + int(attempt)


def bump(d: dict[str, int], key: str, n: int = 1) -> None:
    d[key] = d.get(key, 0) + n


class ModelAgent(Agent):
    """Base of the VLM agents: builds the client, loads templates, keeps counters (see module docstring)."""

    name = "vlm"
    template_names: tuple[str, ...] = ()

    def __init__(
        self,
        model: str | None = None,
        *,
        generation: Mapping[str, Any] | None = None,
        images: Mapping[str, Any] | None = None,
        prompt_templates: str | Path | Mapping[str, str | Path] | None = None,
        cache: str = "off",
        cache_path: str | Path | None = None,
        max_usd: float | None = None,
        max_requests: int | None = None,
        budget_ledger: str | Path | None = None,
        timeout_s: float = 120.0,
        retry: Mapping[str, Any] | None = None,
        api_key_env: str | None = None,
        client: ModelClient | None = None,
        control: ControlMode | Mapping[str, Any] | str | None = None,
    ):
        super().__init__()
        self.control = ControlMode.from_value(control)
        if client is None and not model:
            raise ValueError(f"agent {self.name!r} needs a model: give --model SPEC (e.g. --model openai:gpt-4o or "
                             "--model openai-compatible:http://127.0.0.1:8000/v1:NAME; docs/model-clients.md)")
        if cache not in CACHE_MODES:
            raise ValueError(f"cache mode {cache!r}: expected one of {', '.join(CACHE_MODES)}")
        if cache != "off" and cache_path is None and client is None:
            raise ValueError(f"cache={cache!r} needs cache_path (the response-cache file)")
        self.model_spec = parse_model_spec(model) if model else client.spec  # type: ignore[union-attr]
        self.generation_overrides = dict(generation or {})
        GenerationSettings(**self.generation_overrides)  # validate early (raises pydantic ValidationError)
        self.image_overrides = dict(images or {})
        self.image_settings = ImageSettings(**self.image_overrides)
        self.templates: dict[str, PromptTemplate] = load_templates(self.template_names, prompt_templates)
        self.cache_mode = cache
        self.cache_path = cache_path
        self.max_usd = max_usd
        self.max_requests = max_requests
        self.budget_ledger = budget_ledger
        self.timeout_s = float(timeout_s)
        self.retry = RetryPolicy(**dict(retry)) if retry else None
        self.api_key_env = api_key_env
        self._injected = client
        self.client: ModelClient | None = client
        self._client_key: str | None = None
        self.counters = UsageCounters()
        self.seed = 0

    # ------------------------------------------------------------ config
    @property
    def uses_images(self) -> bool:
        """Whether the camera view's pixels are sent (not under ``--blind`` / ``--oracle-perception``)."""
        return self.control.shows_view

    @property
    def prompt_hash(self) -> str:
        """sha256 over the agent's template hashes (:func:`templates_hash`)."""
        return templates_hash(self.templates)

    def options(self) -> dict[str, Any]:
        """Agent-specific settings that change behaviour (subclasses extend)."""
        return {}

    def config(self) -> dict[str, Any]:
        """Everything that can change the agent's requests or decisions (JSON-able, no URL, no key).

        ``model``: provider and model name (not the endpoint URL);
        ``generation``: the user's overrides (``{}`` = the protocol preset,
        which is hashed with the protocol id); ``images``: image settings;
        ``prompts``: sha256 per template and ``prompt_hash``;
        ``request_layout``: version of the request-building code; plus the
        agent's :meth:`options`. Cache, budget, timeout and retry settings do
        not change replies and are left out.
        """
        cfg: dict[str, Any] = {
            "name": self.name,
            "model": {"provider": self.model_spec.provider, "model": self.model_spec.model},
            "generation": dict(sorted(self.generation_overrides.items())),
            "images": self.image_settings.model_dump(mode="json"),
            "prompts": {n: t.sha256 for n, t in sorted(self.templates.items())},
            "prompt_hash": self.prompt_hash,
            "request_layout": REQUEST_LAYOUT_VERSION,
            **self.options(),
        }
        if not self.control.is_normal:
            cfg["control"] = self.control.as_dict()
        if self._injected is not None:
            cfg["client"] = self._injected.config()
        return cfg

    # ------------------------------------------------------------ client
    def protocol_generation(self, protocol_id: str) -> dict[str, Any]:
        """Generation preset of a protocol (subclasses override)."""
        return {}

    def protocol_images(self, protocol_id: str) -> dict[str, Any]:
        """Image-setting preset of a protocol (subclasses override; the user's ``images`` win)."""
        return {}

    def _ensure_client(self, protocol_id: str) -> ModelClient:
        if self._injected is not None:
            return self._injected
        gen = GenerationSettings(**{**self.protocol_generation(protocol_id), **self.generation_overrides})
        self.image_settings = ImageSettings(**{**self.protocol_images(protocol_id), **self.image_overrides})
        key = json.dumps([gen.model_dump(mode="json"), self.image_settings.model_dump(mode="json")], sort_keys=True)
        if self.client is not None and self._client_key == key:
            return self.client
        self.close()
        cache = ResponseCache(self.cache_path, self.cache_mode) if self.cache_mode != "off" else None
        budget = None
        if self.max_usd is not None or self.max_requests is not None:
            budget = BudgetGuard(max_usd=self.max_usd, max_requests=self.max_requests, ledger_path=self.budget_ledger)
        self.client = make_client(self.model_spec, generation=gen, images=self.image_settings, timeout_s=self.timeout_s,
                                  retry=self.retry, cache=cache, budget=budget, api_key_env=self.api_key_env)
        self._cache = cache
        self._client_key = key
        return self.client

    def close(self) -> None:
        """Close the client and cache this agent built (an injected client is left open)."""
        if self.client is not None and self._injected is None:
            self.client.close()
            cache = getattr(self, "_cache", None)
            if cache is not None:
                cache.close()
        if self._injected is None:
            self.client = None
            self._client_key = None

    # ------------------------------------------------------------ episode
    def _start_episode(self, task_seed: int, protocol_id: str) -> None:
        client = self._ensure_client(protocol_id)
        self.counters = UsageCounters()
        self.seed = int(task_seed)
        cfg = client.config()
        self.stats = {
            "protocol": protocol_id,
            "model": f"{cfg['provider']}:{cfg['model']}",
            "generation": cfg["generation"],
            "unsupported_settings": cfg["unsupported_settings"],
            "prompt_hash": self.prompt_hash,
            "steps": 0,
            "reasks": 0,
            "parse_failures": 0,
            "parse_errors": {},
            "repairs": {},
            "notes": {},
            "last_finish_reason": None,
            "last_response_model": None,
            "last_error_type": None,
            "last_error_message": None,
            "trace": [],
        }
        self._sync_counters()

    def _complete(self, request: ModelRequest) -> ModelReply:
        """Send one request, counting it; transport/budget/cache errors propagate after the counters are synced."""
        assert self.client is not None
        try:
            reply = self.client.complete(request, self.counters)
        except Exception as e:
            self.stats["last_error_type"] = type(e).__name__
            self.stats["last_error_message"] = str(e)[:500]
            raise
        finally:
            self._sync_counters()
        self.stats["last_finish_reason"] = reply.finish_reason
        self.stats["last_response_model"] = reply.reported_model
        return reply

    def _failure(self, kind: str, detail: str) -> None:
        self.stats["parse_failures"] += 1
        bump(self.stats["parse_errors"], kind)
        self.stats["last_error_type"] = f"parse_error:{kind}"
        self.stats["last_error_message"] = detail[:500]

    def _note(self, repairs: list[str], notes: list[str]) -> None:
        for r in repairs:
            bump(self.stats["repairs"], r)
        for n in notes:
            bump(self.stats["notes"], n)

    def _sync_counters(self) -> None:
        self.stats.update(self.counters.as_dict())

    @staticmethod
    def text_sha256(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def reset_common(self, context: AgentContext) -> None:
        self._start_episode(context.seed, context.protocol_id)


class ReAskAgent(ModelAgent):
    """A :class:`ModelAgent` with a reflection memory that asks again for unusable replies: the step loop
    shared by the arena agent (:mod:`urbanarena.agents.vlm.arena`) and the UrbanGround agent
    (:mod:`urbanarena.agents.vlm.urbanground`), whose module docstrings state the rules.

    A subclass sets per episode ``parse_failure`` (``"re-request"`` or ``"corrective-re-ask"``),
    ``max_reasks``, ``rules["memory_from"]`` (``"any-object"`` or ``"accepted"``), ``task_text``,
    ``memory`` and ``_first``, and the counters ``memory_updates`` and ``parse_error_steps`` in ``stats``.
    """

    def _set_memory(self, memory: str | None) -> None:
        """A non-blank string other than the current memory replaces it (counted in ``memory_updates``)."""
        if isinstance(memory, str) and memory.strip() and memory != self.memory:
            self.memory = memory
            self.stats["memory_updates"] += 1

    def _begin_step(self, obs: Mapping[str, Any], system_template: str) -> tuple[int, str]:
        """Count a step; on the episode's first step take the memory the env echoes.

        Returns: ``(step, system)``: the 1-based step (``obs["step"] + 1``) and the system prompt
        (``system_template`` rendered with the observation's task text, else the task's instruction).
        """
        step = int(obs.get("step", self.stats["steps"])) + 1
        self.stats["steps"] += 1
        if self._first:
            self.memory = str((obs.get("text") or {}).get("memory") or "")
            self._first = False
        task_text = str((obs.get("text") or {}).get("task") or self.task_text)
        return step, self.templates[system_template].render(task=task_text)

    def _ask(self, step: int, system: str, rec: dict[str, Any], build: Callable[[], Message],
             parse: Callable[[ModelReply], MemoryReply], correction: Callable[[MemoryReply], str]) -> MemoryReply | None:
        """Request(s) for one step until a usable reply or ``max_reasks`` re-asks are spent.

        Each attempt sends ``build()`` as the user turn (``re-request``: built again; ``corrective-re-ask``:
        the conversation grows by the bad reply, as :func:`~urbanarena.agents.vlm.parsing.echo_text`
        repeats it, and ``correction(parsed)``), with ``sample_index`` :func:`call_index` ``(seed, step,
        attempt)``; counts repairs, notes, failures and re-asks in ``stats`` and in the trace record ``rec``
        (``requests``, ``repairs``, ``notes``, ``failures``); takes memory by ``rules["memory_from"]``.

        Returns: the accepted reply, or ``None`` when every attempt failed (``parse_error_steps`` counted).
        Raises: what :meth:`_complete` raises.
        """
        messages: list[Message] = []
        for attempt in range(1 + self.max_reasks):
            if attempt == 0 or self.parse_failure == "re-request":
                messages = [build()]
            reply = self._complete(ModelRequest(list(messages), system=system,
                                                sample_index=call_index(self.seed, step, attempt)))
            rec["requests"] += 1
            parsed = parse(reply)
            self._note(parsed.repairs, parsed.notes)
            rec["repairs"] += parsed.repairs
            rec["notes"] += parsed.notes
            if self.rules["memory_from"] == "any-object" and parsed.json_object:
                self._set_memory(parsed.memory)
            if parsed.ok:
                if self.rules["memory_from"] == "accepted":
                    self._set_memory(parsed.memory)
                return parsed
            self._failure(parsed.failure or "unknown", parsed.detail)
            rec["failures"].append(parsed.failure or "unknown")
            if attempt < self.max_reasks:
                self.stats["reasks"] += 1
                if self.parse_failure == "corrective-re-ask":
                    said = echo_text(reply.text, reply.refusal, reply.flags)
                    messages = messages + [Message("assistant", said), Message("user", correction(parsed))]
        self.stats["parse_error_steps"] += 1
        return None
