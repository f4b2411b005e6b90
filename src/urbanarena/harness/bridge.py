"""A model client whose replies come from a harness's model (inspect_ai, lmms-eval).

The VLM agents talk to a client through ``complete(request, counters)``, ``config()`` and ``spec``
(:mod:`urbanarena.agents.vlm.common`, an injected ``client=``). :class:`HarnessClient` has that
surface; instead of an SDK it calls a *generate function* that the harness adapter supplies::

    generate(system: str | None, turns: list[HarnessTurn], settings: GenerationSettings) -> HarnessReply

so the agent's protocol still builds every prompt and parses every reply, while the harness owns the
model (its ``--model``, providers, retries, token accounting and logs). Images are encoded here, at the
client boundary, under the agent's :class:`~urbanarena.agents.clients.ImageSettings` (JPEG/PNG bytes in
:class:`~urbanarena.agents.clients.EncodedImage`).

Every reply is counted in the episode's :class:`~urbanarena.agents.clients.UsageCounters` (requests,
tokens, flags ``empty``/``truncated``/``refusal``), so a model that answers garbage is counted, never
replaced. Errors of the generate function propagate: the runner ends the episode with stop reason
``error`` and scores it as the failure it is.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from urbanarena.agents.clients import (
    EncodedImage,
    GenerationSettings,
    ImageSettings,
    ModelReply,
    ModelRequest,
    ModelSpec,
    Text,
    UsageCounters,
    encode_image,
)

#: provider id of replies served by a harness model (``ModelSpec.provider``)
HARNESS_PROVIDER = "harness"


@dataclass
class HarnessTurn:
    """One conversation turn: ``role`` (``user``/``assistant``) and its parts, text (``str``) or
    encoded images (:class:`EncodedImage`), in the order the agent gave them."""

    role: Literal["user", "assistant"]
    parts: list[str | EncodedImage]


@dataclass
class HarnessReply:
    """What the harness model returned.

    Attributes:
        text: the completion text.
        finish_reason: normalised as :class:`~urbanarena.agents.clients.ModelReply` (``stop``, ``length``,
            ``refusal``, ``tool_use``, ``other``).
        raw_finish_reason: the harness's own value.
        input_tokens / output_tokens / reasoning_tokens: usage the harness reported (``None`` = none).
        model: the model name the harness reported.
    """

    text: str
    finish_reason: str = "stop"
    raw_finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


GenerateFn = Callable[[str | None, list[HarnessTurn], GenerationSettings], HarnessReply]


_WARNED: set[tuple[str, str, str]] = set()


def _warn_once(harness: str, model: str, change: str) -> None:
    """Log a protocol setting the harness's provider did not send as asked, once per (harness, model, change)."""
    key = (harness, model, change)
    if key not in _WARNED:
        _WARNED.add(key)
        logging.getLogger("urbanarena.harness").warning(
            "%s model %s: the protocol's %s (the run is marked: generation_changes in each score)", harness, model,
            change)


class HarnessClient:
    """A duck-typed :class:`~urbanarena.agents.clients.ModelClient` over a harness generate function.

    Args:
        generate: the harness's generate function (module docstring).
        model: model name as the harness names it (e.g. ``openai/gpt-4o``, ``mockllm/model``).
        generation: generation settings passed to every call (the protocol's preset; the harness may
            merge its own command-line settings).
        images: image encoding settings.
        harness: harness id (``inspect_ai``, ``lmms-eval``), recorded in :meth:`config`.
    """

    provider = HARNESS_PROVIDER

    def __init__(self, generate: GenerateFn, model: str, *, generation: GenerationSettings | None = None,
                 images: ImageSettings | None = None, harness: str = "harness"):
        self._generate = generate
        self.spec = ModelSpec(provider=HARNESS_PROVIDER, model=str(model), base_url=None)
        self.generation = generation or GenerationSettings()
        self.images = images or ImageSettings()
        self.harness = harness
        self.counters = UsageCounters()
        #: the settings the last request went out with, as the harness reported them (``None``: not reported)
        self.generation_sent: dict[str, Any] | None = None
        #: every way a request differed from :attr:`generation` (``HarnessReply.extra["generation_changes"]``)
        self.generation_changes: set[str] = set()

    def config(self) -> dict[str, Any]:
        """Provider, model, generation settings and image settings (JSON-able)."""
        return {
            "provider": HARNESS_PROVIDER,
            "harness": self.harness,
            "model": self.spec.model,
            "generation": self.generation.model_dump(mode="json"),
            "unsupported_settings": [],
            "images": self.images.model_dump(mode="json"),
        }

    def complete(self, request: ModelRequest, counters: UsageCounters | None = None) -> ModelReply:
        """Send ``request`` through the harness model; returns the (possibly flagged) reply.

        Raises:
            ValueError: malformed request. ImageEncodingError: an image cannot be encoded.
            whatever the generate function raises (the harness's model errors).
        """
        c = counters if counters is not None else self.counters
        request.validate()
        encoded: dict[str, EncodedImage] = {}
        turns: list[HarnessTurn] = []
        for m in request.messages:
            parts: list[str | EncodedImage] = []
            for p in m.parts():
                if isinstance(p, Text):
                    parts.append(p.text)
                else:
                    if p.sha256 not in encoded:
                        encoded[p.sha256] = encode_image(p, self.images, "openai")
                    parts.append(encoded[p.sha256])
            turns.append(HarnessTurn(m.role, parts))
        c.bump("http_attempts")
        t0 = time.perf_counter()
        out = self._generate(request.system, turns, self.generation)
        if "generation_sent" in out.extra:
            self.generation_sent = out.extra["generation_sent"]
        for change in out.extra.get("generation_changes") or []:
            if change not in self.generation_changes:
                self.generation_changes.add(change)
                _warn_once(self.harness, self.spec.model, change)
        flags = []
        if not out.text.strip():
            flags.append("empty")
        if out.finish_reason == "length":
            flags.append("truncated")
        if out.finish_reason == "refusal":
            flags.append("refusal")
        reply = ModelReply(
            text=out.text, finish_reason=out.finish_reason, raw_finish_reason=out.raw_finish_reason,  # type: ignore[arg-type]
            input_tokens=out.input_tokens, output_tokens=out.output_tokens, reasoning_tokens=out.reasoning_tokens,
            latency_s=time.perf_counter() - t0, requested_model=self.spec.model, reported_model=out.model,
            flags=flags, attempts=1,
        )
        c.record_reply(reply)
        return reply

    def close(self) -> None:
        """Nothing to close (the harness owns the model)."""


__all__ = ["GenerateFn", "HARNESS_PROVIDER", "HarnessClient", "HarnessReply", "HarnessTurn"]
