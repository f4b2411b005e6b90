"""Anthropic Messages API (``POST /v1/messages``) through the ``anthropic`` SDK's client (base URL,
auth and version headers, connection pool, typed status and connection errors); the body is built
here as plain JSON and the reply read from the response JSON.

Request mapping: ``system`` -> the ``system`` parameter; user turns -> content
blocks ``{"type": "image", "source": {"type": "base64", "media_type": ...,
"data": ...}}`` and ``{"type": "text", "text": ...}``; assistant turns ->
plain strings. Generation: ``max_tokens`` = ``max_output_tokens``;
``temperature`` and ``top_p`` when set (as raw body fields: recent SDKs no
longer type them, and models that reject them answer 400, which is raised, not
retried); ``reasoning_effort`` -> ``output_config={"effort": ...}`` (``low`` ...
``max``); ``thinking={"type": "enabled", "budget_tokens": N}`` when
``thinking_budget_tokens`` is set. ``seed`` does not exist in this API and is
not sent (listed in the client config's ``unsupported_settings``).

Reply mapping: text blocks joined -> ``text``; thinking blocks -> ``thinking``;
``stop_reason`` ``end_turn``/``stop_sequence`` -> ``stop``, ``max_tokens`` ->
``length``, ``refusal`` -> ``refusal``, ``tool_use`` -> ``tool_use``, others
(``pause_turn`` ...) -> ``other``; ``usage.input_tokens`` (plus prompt-cache
creation/read tokens when reported) and ``usage.output_tokens``; ``model``;
request id from the ``request-id`` header.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping

import anthropic

from urbanarena.agents.clients import http_pool
from urbanarena.agents.clients.base import ModelClient
from urbanarena.agents.clients.errors import ReplyFault
from urbanarena.agents.clients.images import EncodedImage
from urbanarena.agents.clients.types import Image, ModelReply, ModelRequest

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "refusal", "tool_use": "tool_use"}


class AnthropicClient(ModelClient):
    """Client for ``anthropic:`` specs (see module docstring)."""

    provider = "anthropic"

    def _make_sdk(self, api_key: str) -> anthropic.Anthropic:
        kwargs: dict[str, Any] = dict(api_key=api_key, base_url=self.spec.endpoint, max_retries=0, timeout=self.timeout_s)
        if self.shared_http:
            kwargs["http_client"] = http_pool.shared_client("anthropic", self.spec.endpoint, anthropic.DefaultHttpxClient)
        if "open_telemetry" in inspect.signature(anthropic.Anthropic.__init__).parameters:
            kwargs["open_telemetry"] = False  # no request/response content leaves through tracing
        return anthropic.Anthropic(**kwargs)

    def build_payload(self, request: ModelRequest, encoded: dict[str, EncodedImage]) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request`` (no key inside)."""
        messages: list[dict[str, Any]] = []
        for m in request.messages:
            if m.role == "assistant":
                messages.append({"role": "assistant", "content": "".join(p.text for p in m.parts())})  # type: ignore[union-attr]
                continue
            blocks: list[dict[str, Any]] = []
            for p in m.parts():
                if isinstance(p, Image):
                    e = encoded[p.sha256]
                    blocks.append({"type": "image", "source": {"type": "base64", "media_type": e.media_type, "data": e.b64()}})
                else:
                    blocks.append({"type": "text", "text": p.text})
            messages.append({"role": "user", "content": blocks})
        g = self.generation.effective_for("anthropic")
        payload: dict[str, Any] = {"model": self.spec.model, "messages": messages, "max_tokens": g["max_output_tokens"]}
        if request.system:
            payload["system"] = request.system
        # Sampling parameters travel as raw JSON fields: recent SDK releases dropped them from
        # the typed signature (newer models reject them) while the HTTP API still takes them
        # for the models that do.
        extra = {name: g[name] for name in ("temperature", "top_p") if g[name] is not None}
        if g["reasoning_effort"] is not None:
            extra["output_config"] = {"effort": g["reasoning_effort"]}
        if extra:
            payload["extra_body"] = extra
        if g["thinking_budget_tokens"] is not None:
            payload["thinking"] = {"type": "enabled", "budget_tokens": g["thinking_budget_tokens"]}
        return payload

    def _send(self, request: ModelRequest, encoded: dict[str, EncodedImage], deadline: float) -> tuple[ModelReply, Mapping[str, str]]:
        # Posted as plain JSON through the SDK's transport (base URL, auth and version headers, typed
        # status/connection errors), the body streamed under the attempt deadline and the reply-size limit
        # (transport.post_json) and read from its JSON, as the OpenAI client does.
        payload = self.build_payload(request, encoded)
        body = {**{k: v for k, v in payload.items() if k != "extra_body"}, **payload.get("extra_body", {})}
        msg, headers = self._post("/v1/messages", body, deadline)
        label = f"{self.spec.provider}:{self.spec.model}"
        content = msg.get("content")
        if not isinstance(content, list) or msg.get("type", "message") != "message":
            raise ReplyFault("not_json", f"{label}: the reply is not a Messages API message (no 'content' list; "
                                         f"keys {sorted(msg)[:8]})")
        texts, thinking = [], []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "thinking":
                thinking.append(block.get("thinking") or "")
        text = "".join(texts)
        raw_finish = msg.get("stop_reason")
        finish = _FINISH.get(raw_finish or "", "other")
        usage = msg.get("usage") if isinstance(msg.get("usage"), dict) else None
        in_tok = None
        if usage is not None:
            in_tok = sum(int(usage.get(k) or 0) for k in
                         ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        reply = ModelReply(
            text=text,
            finish_reason=finish,  # type: ignore[arg-type]
            raw_finish_reason=raw_finish,
            input_tokens=in_tok,
            output_tokens=None if usage is None else usage.get("output_tokens"),
            requested_model=self.spec.model,
            reported_model=msg.get("model") or None,
            request_id=headers.get("request-id"),
            response_id=msg.get("id") or None,
            flags=self._flags(text, finish, False),
            thinking="".join(thinking) if thinking else None,
        )
        return reply, headers
