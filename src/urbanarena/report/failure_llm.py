"""Optional LLM classifier of failure causes (``urbanarena report --failure-classifier SPEC``).

The report's failure causes come from deterministic rules (:mod:`urbanarena.report.failures`). A
researcher may also want a model's reading of each failed episode — the papers classified failures
by hand. This module asks a model (any :mod:`urbanarena.agents.clients` spec) to put each failed
episode into one of the same five causes (:data:`~urbanarena.report.failures.CAUSES`) from a text
digest of what the store holds (task, stop reason, answer and verdict, distances, counters, and the
agent's per-step actions and thoughts), and reports its counts next to the rules with the agreement
between the two.

Rules:

* **Never the model under test.** :func:`check_classifier` refuses a classifier whose model is the
  model of any run in the report (``same_model``: provider prefix, path and snapshot suffix ignored).
* **Counted, never guessed.** A reply that is not a JSON object with a ``cause`` among the five, or a
  request that fails for good, is counted as ``Unparsed`` (with the error texts); it is never replaced
  by the rule's cause.
* **Agreement** over the episodes both classified (the rule gave one of the five causes and the reply
  parsed): the share of equal labels and Cohen's kappa (Cohen 1960, "A coefficient of agreement for
  nominal scales", Educ. Psychol. Meas. 20: ``kappa = (p_o - p_e) / (1 - p_e)``, ``p_o`` the observed
  agreement, ``p_e = sum_k p_rule(k) p_llm(k)`` the agreement expected by chance; ``None`` when
  ``p_e = 1``).
* **Bounded.** At most ``max_per_run`` failed episodes per run (in task/seed order), temperature 0.
* The prompt is ours (:data:`DEFAULT_PROMPT`); users pass their own template file with the
  ``{causes}`` and ``{episode}`` fields (``str.format``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.agents.clients import (
    GenerationSettings,
    ImageSettings,
    Message,
    MissingAPIKeyError,
    ModelClient,
    ModelClientError,
    ModelRequest,
    Text,
    UsageCounters,
    make_client,
    parse_model_spec,
)
from urbanarena.errors import UrbanArenaError
from urbanarena.report.failures import CAUSES
from urbanarena.tasks.validators import same_model

#: label of a reply that named no valid cause (or a request that failed)
UNPARSED = "Unparsed"
#: longest thought / answer text put into a digest, characters
MAX_TEXT_CHARS = 300
#: steps of the trace put into a digest (the last ones)
MAX_DIGEST_STEPS = 30

#: what each cause means, as the model is told (our wording; the rules are in docs/report.md)
CAUSE_MEANINGS = {
    "Action": "the agent could not act: its replies were unusable, its actions invalid or rejected, or its "
              "final answer could not be read",
    "Grounding": "the agent perceived something but tied it to the wrong place or object (took another "
                 "place for the goal, read the wrong sign, picked the wrong map cell)",
    "Perception": "the agent misread what it saw (wrong count, a name not in view, a wrong description)",
    "Explore": "the agent never found the goal: it wandered, looped or ran out of steps",
    "Planning": "the agent reached or passed the goal (or had what it needed) but did not finish correctly",
}

DEFAULT_PROMPT = """You review one failed episode of an embodied agent in a city benchmark and name the main cause \
of the failure.

Causes:
{causes}

The episode:
{episode}

Answer with one JSON object and nothing else: {{"cause": "<one of the causes above>", "reason": "<one sentence>"}}"""


def _clip(v: Any, n: int = MAX_TEXT_CHARS) -> str:
    s = "" if v is None else str(v)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def episode_digest(row: Mapping[str, Any], geom: Any = None, task: Any = None) -> str:
    """A plain-text digest of one stored episode for the classifier.

    Args:
        row: a store row (:meth:`urbanarena.runner.store.Store.rows`).
        geom: its :class:`~urbanarena.report.episodes.Geometry` (position tasks) or ``None``.
        task: its :class:`~urbanarena.tasks.schema.Task` when loaded, else ``None``.
    Returns: lines ``key: value``; then up to :data:`MAX_DIGEST_STEPS` trace steps (action and
        thought, each clipped to :data:`MAX_TEXT_CHARS` characters).
    """
    lines = [f"family: {row.get('family')}"]
    if row.get("category"):
        lines.append(f"category: {row.get('category')}")
    instruction = getattr(task, "instruction", None) if task is not None else None
    if instruction:
        lines.append(f"task: {_clip(instruction, 600)}")
    lines.append(f"steps taken: {row.get('steps')}")
    lines.append(f"ended by: {row.get('stop_reason') or row.get('status')}")
    metrics = row.get("metrics") if isinstance(row.get("metrics"), Mapping) else {}
    val = metrics.get("validation") if isinstance(metrics.get("validation"), Mapping) else {}
    details = row.get("details") if isinstance(row.get("details"), Mapping) else {}
    for key in ("answer", "expected"):
        v = row.get(key, metrics.get(key))
        if v is None and key == "answer":  # continuous episodes keep the answer in details
            v = details.get("answer")
        if v is not None:
            lines.append(f"{key}: {_clip(v)}")
    if val.get("message"):
        lines.append(f"verdict: {_clip(val.get('message'))}")
    if geom is not None:
        lines.append(f"success radius: {geom.radius_m:.0f} m; closest approach to the goal: "
                     f"{geom.min_distance_m:.0f} m; final distance: {geom.final_distance_m:.0f} m")
    for key in ("invalid_actions", "parse_error_count", "invalid_action_count"):
        if row.get(key):
            lines.append(f"{key.replace('_', ' ')}: {row.get(key)}")
    stats = row.get("agent_stats") if isinstance(row.get("agent_stats"), Mapping) else {}
    trace = stats.get("trace") if isinstance(stats.get("trace"), list) else []
    if trace:
        shown = trace[-MAX_DIGEST_STEPS:]
        if len(shown) < len(trace):
            lines.append(f"(first {len(trace) - len(shown)} steps left out)")
        for rec in shown:
            if not isinstance(rec, Mapping):
                continue
            t = f"step {rec.get('step')}: {rec.get('action')}"
            if rec.get("thought"):
                t += f" — thought: {_clip(rec.get('thought'))}"
            lines.append(t)
    else:
        acts = row.get("actions") if isinstance(row.get("actions"), list) else []
        if acts:
            lines.append("actions: " + _clip(", ".join(str(a) for a in acts[-MAX_DIGEST_STEPS:]), 800))
    return "\n".join(lines)


def parse_cause(text: str | None) -> str | None:
    """The cause named by a reply: the ``cause`` field of the first JSON object in ``text``, matched
    case-insensitively against :data:`CAUSES`; ``None`` for anything else."""
    if not text:
        return None
    m = re.search(r"\{.*\}", text, flags=re.S)
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("cause"), str):
        return None
    want = obj["cause"].strip().lower()
    return next((c for c in CAUSES if c.lower() == want), None)


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two equally long label sequences (module docstring); ``None`` when empty or
    when chance agreement is 1 (both raters used one and the same label throughout).

    Raises:
        ValueError: different lengths.
    """
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    po = sum(1 for x, y in zip(a, b) if x == y) / n
    labels = set(a) | set(b)
    pe = sum((sum(1 for x in a if x == k) / n) * (sum(1 for y in b if y == k) / n) for k in labels)
    if pe >= 1.0:
        return None
    return (po - pe) / (1.0 - pe)


def check_classifier(model_id: str, models_under_test: Sequence[str]) -> None:
    """Refuse a classifier that is one of the models under test.

    Raises:
        UrbanArenaError: ``model_id`` names one of ``models_under_test``.
    """
    for m in models_under_test:
        if m and same_model(model_id, m):
            raise UrbanArenaError(f"--failure-classifier {model_id} is a model under test ({m}): the classifier "
                                  "must be another model")


@dataclass
class FailureClassifier:
    """A model that labels failed episodes (module docstring).

    Args:
        spec: model spec (``openai:MODEL``, ``openai-compatible:URL:MODEL``, ``anthropic:MODEL``);
            the key comes from the provider's environment variable only.
        prompt: template with ``{causes}`` and ``{episode}`` (default :data:`DEFAULT_PROMPT`).
        max_output_tokens: reply length cap.
        client: a ready client (tests); built from ``spec`` otherwise.
    Raises (on construction): ``ModelSpecError`` for a bad spec; ``UrbanArenaError`` for a template
        without its two fields.
    """

    spec: str
    prompt: str = DEFAULT_PROMPT
    max_output_tokens: int = 200
    timeout_s: float = 120.0
    client: ModelClient | None = None
    counters: UsageCounters = field(default_factory=UsageCounters)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self):
        s = parse_model_spec(self.spec)
        self.model_id = f"{s.provider}:{s.model}"
        for f in ("{causes}", "{episode}"):
            if f not in self.prompt:
                raise UrbanArenaError(f"failure-classifier prompt template lacks the {f} field")
        try:
            self.prompt.format(causes="", episode="")
        except (KeyError, IndexError, ValueError) as e:
            raise UrbanArenaError(f"failure-classifier prompt template: {e!r} (only {{causes}} and {{episode}} "
                                  "are fields; write other braces doubled)") from None
        self._own = self.client is None

    @classmethod
    def from_files(cls, spec: str, prompt_file: str | Path | None = None, **kw: Any) -> "FailureClassifier":
        """Like the constructor, with the template read from ``prompt_file`` (UTF-8 text).

        Raises: ``UrbanArenaError`` naming the file when it cannot be read.
        """
        if prompt_file is None:
            return cls(spec, **kw)
        try:
            text = Path(prompt_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UrbanArenaError(f"{prompt_file}: cannot read the failure-classifier prompt: {e}") from None
        return cls(spec, prompt=text, **kw)

    def _client(self) -> ModelClient:
        if self.client is None:
            self.client = make_client(parse_model_spec(self.spec),
                                      generation=GenerationSettings(temperature=0.0,
                                                                    max_output_tokens=self.max_output_tokens),
                                      images=ImageSettings(), timeout_s=self.timeout_s)
        return self.client

    def render(self, digest: str) -> str:
        """The prompt for one episode digest."""
        causes = "\n".join(f"- {c}: {CAUSE_MEANINGS[c]}" for c in CAUSES)
        return self.prompt.format(causes=causes, episode=digest)

    def classify(self, digest: str) -> str:
        """One of :data:`CAUSES`, or :data:`UNPARSED` (the reply named none, or the request failed;
        the error text is kept in :attr:`errors`).

        Raises:
            MissingAPIKeyError: the provider's key variable is unset (nothing is classified).
        """
        req = ModelRequest([Message("user", [Text(self.render(digest))])], sample_index=0)
        client = self._client()  # a missing key is a set-up error: it propagates
        try:
            reply = client.complete(req, self.counters)
        except ModelClientError as e:
            self.errors.append(f"{type(e).__name__}: {str(e)[:300]}")
            return UNPARSED
        return parse_cause(reply.text) or UNPARSED

    def close(self) -> None:
        if self._own and self.client is not None:
            self.client.close()
            self.client = None


def classify_run(classifier: FailureClassifier, items: Sequence[tuple[Mapping[str, Any], Any, Any, str | None]],
                 max_episodes: int) -> dict[str, Any]:
    """Classify a run's failed episodes and compare with the rules.

    Args:
        items: ``(row, geometry, task, rule_cause)`` per failed episode in report order; ``rule_cause``
            is the rules' bucket (one of :data:`CAUSES` or another bucket name).
        max_episodes: classify at most this many (the first ones).
    Returns: ``{"classified": n, "skipped": m, "counts": {cause or Unparsed: n}, "agreement": share or
        None, "kappa": float or None, "compared": n both labelled with a cause}``.
    """
    counts = {c: 0 for c in (*CAUSES, UNPARSED)}
    rule_l, llm_l = [], []
    chosen = list(items)[:max(0, int(max_episodes))]
    for row, geom, task, rule in chosen:
        label = classifier.classify(episode_digest(row, geom, task))
        counts[label] += 1
        if label != UNPARSED and rule in CAUSES:
            rule_l.append(rule)
            llm_l.append(label)
    agree = sum(1 for x, y in zip(rule_l, llm_l) if x == y) / len(rule_l) if rule_l else None
    return {"classified": len(chosen), "skipped": len(items) - len(chosen), "counts": counts,
            "agreement": agree, "kappa": cohen_kappa(rule_l, llm_l), "compared": len(rule_l)}


__all__ = ["CAUSE_MEANINGS", "DEFAULT_PROMPT", "FailureClassifier", "UNPARSED", "check_classifier", "classify_run",
           "cohen_kappa", "episode_digest", "parse_cause"]
