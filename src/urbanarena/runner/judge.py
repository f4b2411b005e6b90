"""The LLM judge of ``fuzzy_match`` answers in a run (``urbanarena run --judge SPEC``).

A judge is a model client (:mod:`urbanarena.agents.clients`) wrapped in a
:class:`~urbanarena.tasks.validators.TemplateJudge`: one request per judged
answer, a single user turn holding
:data:`~urbanarena.tasks.validators.JUDGE_PROMPT_TEMPLATE` filled with the
task's question (``instruction``), its reference ``answer`` and the agent's
answer; the verdict is read by
:func:`~urbanarena.tasks.validators.parse_verdict`.

Rules (``docs/runs.md``, "Fuzzy-match judge"):

* **Never the model under test.** :func:`check_judge` refuses a judge whose
  model is the agent's model (``same_model``: provider prefix, path and
  snapshot suffix ignored) before anything runs; the validator also refuses a
  reply whose *reported* model is the model under test
  (:class:`~urbanarena.tasks.validators.JudgeConflictError`), which stops the run.
* **Pinned.** :meth:`JudgeSettings.config` — provider, model, generation
  settings as sent (default temperature 0 and
  :data:`~urbanarena.tasks.validators.JUDGE_MAX_OUTPUT_TOKENS` output tokens,
  overridable with ``--judge-param``), prompt-template hash, request sample
  index — enters the config hash of the arena configs (a different judge
  gives different scores). The endpoint URL does not (as for the agent).
* **Same response cache.** The judge's client uses the run's response cache
  (mode and file of ``--cache`` / ``--cache-path``), so a replay with
  ``--cache read-only`` rescoring a finished run gets the same verdicts
  without an API call. Judge requests use sample index 0: the same
  (question, reference, answer) is judged once and served from the cache
  afterwards (another seed giving the same answer costs nothing).
* **Counted separately.** Judge calls happen after the episode ended; they
  are not agent requests and do not count toward the step limit or the
  agent's ``llm_request_count``. Their usage is stored per episode in
  ``details.judge_usage`` (the :class:`~urbanarena.agents.clients.UsageCounters`
  fields plus ``errors``). They **do** count toward ``--max-requests`` and
  ``--max-usd``: the caps bound what the RUN_DIR spends on APIs, and the
  judge shares the run's budget ledger. A cap reached at a judge call stops
  the run cleanly like any cap (the episode is not stored; the rerun
  replays the agent's calls from the cache and then asks the judge).
* **Failures recorded, never guessed.** A judge request that fails for good
  (transport faults after the retries, a rejected request) leaves the answer
  unjudged: empty verdict text, ``judge_verdict_parsed`` false, the error in
  ``details.judge_usage.errors``. Run-level errors (budget cap, read-only
  cache miss) propagate as for the agent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from urbanarena.agents.clients import (
    BudgetExceeded,
    BudgetGuard,
    CacheMissError,
    GenerationSettings,
    ImageSettings,
    Message,
    ModelClient,
    ModelClientError,
    ModelRequest,
    ModelSpec,
    ResponseCache,
    RetryPolicy,
    Text,
    UsageCounters,
    make_client,
    parse_model_spec,
)
from urbanarena.tasks.validators import (
    JUDGE_MAX_OUTPUT_TOKENS,
    JUDGE_PROMPT_TEMPLATE,
    JudgeConflictError,
    TemplateJudge,
    prompt_hash,
    same_model,
)

#: the judge's generation defaults (``--judge-param`` overrides them field by field)
JUDGE_GENERATION_DEFAULTS: dict[str, Any] = {"temperature": 0.0, "max_output_tokens": JUDGE_MAX_OUTPUT_TOKENS}
#: ``ModelRequest.sample_index`` of every judge request (module docstring)
JUDGE_SAMPLE_INDEX = 0
#: version of the judge request layout (a single user turn with the filled template); hashed
JUDGE_REQUEST_LAYOUT = 1
#: longest error text kept per failed judge request
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class JudgeSettings:
    """A run's judge: what is hashed and what only runs it.

    Attributes:
        spec: the model spec as given (``openai:gpt-4o-2024-08-06``,
            ``openai-compatible:URL:MODEL``, ``anthropic:MODEL``).
        generation: :class:`GenerationSettings` overrides of
            :data:`JUDGE_GENERATION_DEFAULTS`.
        cache_mode, cache_path: the run's response cache (``off`` = none).
        max_usd, max_requests, budget_ledger: the run's caps and shared ledger.
        timeout_s: per-request timeout, seconds.
        retry: :class:`RetryPolicy` fields (``None`` = defaults).
        api_key_env: variable holding the judge's key (else the provider default).
    """

    spec: str
    generation: dict[str, Any] = field(default_factory=dict)
    cache_mode: str = "off"
    cache_path: str | None = None
    max_usd: float | None = None
    max_requests: int | None = None
    budget_ledger: str | None = None
    timeout_s: float = 120.0
    retry: dict[str, Any] | None = None
    api_key_env: str | None = None

    @property
    def model_spec(self) -> ModelSpec:
        """The parsed spec. Raises :class:`~urbanarena.agents.clients.ModelSpecError`."""
        return parse_model_spec(self.spec)

    @property
    def model_id(self) -> str:
        """``provider:model`` (no endpoint URL): the judge's pinned id, stored with every verdict."""
        s = self.model_spec
        return f"{s.provider}:{s.model}"

    def generation_settings(self) -> GenerationSettings:
        """:data:`JUDGE_GENERATION_DEFAULTS` with :attr:`generation` on top. Raises pydantic ``ValidationError``."""
        return GenerationSettings(**{**JUDGE_GENERATION_DEFAULTS, **self.generation})

    def config(self) -> dict[str, Any]:
        """The hashed part (module docstring): provider, model, generation as sent, prompt hash, layout."""
        s = self.model_spec
        return {
            "model": {"provider": s.provider, "model": s.model},
            "generation": self.generation_settings().effective_for(s.provider),
            "prompt_hash": prompt_hash(JUDGE_PROMPT_TEMPLATE),
            "sample_index": JUDGE_SAMPLE_INDEX,
            "request_layout": JUDGE_REQUEST_LAYOUT,
        }

    def runtime(self) -> dict[str, Any]:
        """What runs the judge without changing its verdicts (``run.json``): endpoint, cache, caps, timeout."""
        return {
            "endpoint": self.model_spec.endpoint,
            "cache": {"mode": self.cache_mode, "path": self.cache_path},
            "budget": {"max_usd": self.max_usd, "max_requests": self.max_requests, "ledger": self.budget_ledger},
            "timeout_s": self.timeout_s,
            "counts_toward_step_limit": False,
            "counts_toward_caps": True,
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_judge(settings: JudgeSettings, model_under_test: str) -> None:
    """Refuse a judge that is the model under test (before the run).

    Raises:
        ModelSpecError: the judge spec cannot be parsed.
        JudgeConflictError: the judge's model names the model under test
            (:func:`~urbanarena.tasks.validators.same_model`).
    """
    if same_model(settings.model_id, model_under_test):
        raise JudgeConflictError(
            f"--judge {settings.model_id} is the model under test ({model_under_test}): a fuzzy-match judge must be "
            "another model")


class RunJudge:
    """One judge client per episode runner (thread or worker process); see the module docstring.

    Use: :meth:`begin_episode`, then the validator calls :attr:`judge`; then
    :meth:`usage` gives the episode's judge counters. The client is built on
    first use and kept across episodes.

    Args:
        settings: the run's :class:`JudgeSettings`.
        client: a ready client (tests); the judge then never closes it.
    """

    def __init__(self, settings: JudgeSettings, client: ModelClient | None = None):
        self.settings = settings
        self._client = client
        self._own = client is None
        self._cache: ResponseCache | None = None
        gen = settings.generation_settings()
        self.judge = TemplateJudge(self._complete, settings.model_id, None, JUDGE_PROMPT_TEMPLATE,
                                   gen.max_output_tokens)
        self.counters = UsageCounters()
        self.errors: list[str] = []

    @property
    def model_id(self) -> str:
        return self.settings.model_id

    def client(self) -> ModelClient:
        """The judge's model client (built on first use).

        Raises: ``MissingAPIKeyError`` (key variable unset), ``ModelClientError``.
        """
        if self._client is None:
            s = self.settings
            cache = ResponseCache(s.cache_path, s.cache_mode) if s.cache_mode != "off" and s.cache_path else None
            budget = None
            if s.max_usd is not None or s.max_requests is not None:
                budget = BudgetGuard(max_usd=s.max_usd, max_requests=s.max_requests, ledger_path=s.budget_ledger)
            self._cache = cache
            self._client = make_client(s.model_spec, generation=s.generation_settings(), images=ImageSettings(),
                                       timeout_s=s.timeout_s, retry=RetryPolicy(**s.retry) if s.retry else None,
                                       cache=cache, budget=budget, api_key_env=s.api_key_env)
        return self._client

    def begin_episode(self) -> None:
        """Reset the per-episode counters."""
        self.counters = UsageCounters()
        self.errors = []

    def usage(self) -> dict[str, Any]:
        """The episode's judge usage: ``model`` and the :class:`UsageCounters` fields, ``errors`` (texts)."""
        return {"model": self.model_id, **self.counters.as_dict(), "errors": list(self.errors)}

    def _complete(self, prompt: str, max_output_tokens: int) -> tuple[str, str | None]:
        """One judge request -> (reply text, reported model). Failures other than run-level stops
        return an empty text (an unparsable verdict) and are recorded in :attr:`errors`."""
        request = ModelRequest([Message("user", [Text(prompt)])], sample_index=JUDGE_SAMPLE_INDEX)
        try:
            reply = self.client().complete(request, self.counters)
        except (BudgetExceeded, CacheMissError):
            raise
        except ModelClientError as e:
            self.errors.append(f"{type(e).__name__}: {str(e)[:MAX_ERROR_CHARS]}")
            return "", None
        return reply.text or "", reply.reported_model

    def close(self) -> None:
        """Close the client and cache this judge built."""
        if self._own and self._client is not None:
            self._client.close()
            if self._cache is not None:
                self._cache.close()
            self._client = None
            self._cache = None


__all__ = ["JUDGE_GENERATION_DEFAULTS", "JUDGE_SAMPLE_INDEX", "JudgeSettings", "RunJudge", "check_judge"]
