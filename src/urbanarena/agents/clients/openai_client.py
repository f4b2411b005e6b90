"""OpenAI and OpenAI-compatible servers (vLLM, SGLang, Ollama, LM Studio,
Gemini's OpenAI endpoint ...): Chat Completions (``POST /chat/completions``) through the ``openai``
SDK's client (base URL, auth header, timeout, connection pool, typed status and connection errors);
the request body is built here as plain JSON and the reply read from the response JSON (no per-call
typed-dict transform or reply model construction: measured CPU, docs/bench.md).

Request mapping: ``system`` -> a ``system`` message; user turns -> content
lists of ``{"type": "text"}`` and ``{"type": "image_url", "image_url":
{"url": "data:<media>;base64,...", "detail": ...}}`` (``detail`` only when
set); assistant turns -> plain strings. Generation: ``temperature``,
``top_p``, ``seed``, ``reasoning_effort`` when set; the output cap is sent as
``max_completion_tokens`` to OpenAI (``max_tokens`` is deprecated there) and as
``max_tokens`` to OpenAI-compatible servers (what vLLM, Ollama and LM Studio
all accept); ``max_tokens_param`` overrides.

Reply mapping: ``choices[0].message.content`` (``""`` when null), finish
``stop`` -> ``stop``, ``length`` -> ``length``, ``content_filter`` or a
``message.refusal`` -> ``refusal``, ``tool_calls``/``function_call`` ->
``tool_use``; ``usage.prompt_tokens`` / ``completion_tokens`` /
``completion_tokens_details.reasoning_tokens``; ``model``; request id from the
``x-request-id`` header.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal, Mapping

import openai

from urbanarena.agents.clients import http_pool
from urbanarena.agents.clients.base import ModelClient
from urbanarena.agents.clients.errors import ReplyFault
from urbanarena.agents.clients.images import EncodedImage
from urbanarena.agents.clients.spec import ModelSpec
from urbanarena.agents.clients.types import Image, ModelReply, ModelRequest

class _Mark:
    """Stands in for an :class:`EncodedImage` while :meth:`OpenAIClient.payload_bytes` serializes a request."""

    __slots__ = ("url",)

    def __init__(self, url: str):
        self.url = url

    def data_url(self) -> str:
        return self.url


_FINISH = {"stop": "stop", "length": "length", "content_filter": "refusal", "tool_calls": "tool_use", "function_call": "tool_use"}


class OpenAIClient(ModelClient):
    """Client for ``openai:`` and ``openai-compatible:`` specs (see module docstring).

    Extra args:
        max_tokens_param: ``max_completion_tokens`` or ``max_tokens``;
            default by provider (module docstring).
    Other args as :class:`~urbanarena.agents.clients.base.ModelClient`.
    """

    provider = "openai"

    def __init__(self, spec: ModelSpec, *, max_tokens_param: Literal["max_completion_tokens", "max_tokens"] | None = None, **kw: Any):
        self.max_tokens_param = max_tokens_param or ("max_completion_tokens" if spec.provider == "openai" else "max_tokens")
        super().__init__(spec, **kw)

    def _make_sdk(self, api_key: str) -> openai.OpenAI:
        http = http_pool.shared_client("openai", self.spec.endpoint, openai.DefaultHttpxClient) if self.shared_http else None
        return openai.OpenAI(api_key=api_key, base_url=self.spec.endpoint, max_retries=0, timeout=self.timeout_s,
                             http_client=http)

    def _request_options(self) -> dict[str, Any]:
        return {"max_tokens_param": self.max_tokens_param}

    def build_payload(self, request: ModelRequest, encoded: dict[str, EncodedImage]) -> dict[str, Any]:
        """The JSON body of ``POST /chat/completions`` for ``request`` (the keyword arguments
        ``chat.completions.create`` would take; no key inside)."""
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        for m in request.messages:
            if m.role == "assistant":
                messages.append({"role": "assistant", "content": "".join(p.text for p in m.parts())})  # type: ignore[union-attr]
                continue
            parts: list[dict[str, Any]] = []
            for p in m.parts():
                if isinstance(p, Image):
                    url: dict[str, Any] = {"url": encoded[p.sha256].data_url()}
                    if self.images.detail is not None:
                        url["detail"] = self.images.detail
                    parts.append({"type": "image_url", "image_url": url})
                else:
                    parts.append({"type": "text", "text": p.text})
            messages.append({"role": "user", "content": parts})
        g = self.generation.effective_for(self.spec.provider)
        payload: dict[str, Any] = {"model": self.spec.model, "messages": messages, self.max_tokens_param: g["max_output_tokens"]}
        for name in ("temperature", "top_p", "seed", "reasoning_effort"):
            if g[name] is not None:
                payload[name] = g[name]
        return payload

    def payload_bytes(self, request: ModelRequest, encoded: dict[str, EncodedImage]) -> bytes:
        """:meth:`build_payload` as the UTF-8 JSON bytes the ``openai`` SDK would send for it (``json.dumps``
        with ``ensure_ascii=False`` and separators ``(",", ":")``, as its ``openapi_dumps``).

        Each image's data URL (tens of kilobytes of base64 text, which needs no JSON escaping) is spliced
        into the serialized text whole instead of being scanned by the JSON encoder on every request:
        the conversation is serialized with a placeholder per image (a fresh random token), and each
        placeholder is then replaced by its data URL. Same bytes, less CPU per request (docs/bench.md).
        """
        token = uuid.uuid4().hex
        urls: dict[bytes, bytes] = {}
        marks: dict[str, _Mark] = {}
        for i, (sha, enc) in enumerate(encoded.items()):
            mark = f"urbanarena-image-{token}-{i}"
            urls[mark.encode("ascii")] = enc.data_url().encode("ascii")
            marks[sha] = _Mark(mark)
        data = json.dumps(self.build_payload(request, marks), ensure_ascii=False,  # type: ignore[arg-type]
                          separators=(",", ":")).encode("utf-8")
        for mark_b, url in urls.items():
            data = data.replace(mark_b, url)
        return data

    def _send(self, request: ModelRequest, encoded: dict[str, EncodedImage], deadline: float) -> tuple[ModelReply, Mapping[str, str]]:
        # The payload is plain JSON already (build_payload): it is posted through the SDK's transport (base URL,
        # auth, timeout, typed status/connection errors) and the reply read from its JSON, skipping
        # ``chat.completions.create``'s typed-dict transform of the request and model construction of the
        # reply. Measured on the concurrency sweep (docs/bench.md): 18 % less client CPU and 10 % less wall
        # time at 16 episodes in flight, where the run is CPU-bound. The body streams under the attempt
        # deadline and the reply-size limit (transport.post_json). The body goes as bytes (payload_bytes: the
        # images' base64 text is spliced in, not re-scanned by the JSON encoder on every request).
        completion, headers = self._post("/chat/completions", self.payload_bytes(request, encoded), deadline)
        if not isinstance(completion.get("choices"), list):
            raise ReplyFault("not_json", f"{self.spec.provider}:{self.spec.model}: the reply is not a chat "
                                         f"completion (no 'choices' list; keys {sorted(completion)[:8]})")
        text, raw_finish, refusal_text = "", None, None
        choices = completion["choices"]
        if choices and isinstance(choices[0], dict):
            choice = choices[0]
            raw_finish = choice.get("finish_reason")
            message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            text = message.get("content") or ""
            if not isinstance(text, str):  # a content-part list from some compatible servers
                text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
            refusal_text = message.get("refusal") or None
        finish = _FINISH.get(raw_finish or "", "other")
        if refusal_text:
            finish = "refusal"
        usage = completion.get("usage") if isinstance(completion.get("usage"), dict) else None
        reasoning = None
        if usage is not None and isinstance(usage.get("completion_tokens_details"), dict):
            reasoning = usage["completion_tokens_details"].get("reasoning_tokens")
        reply = ModelReply(
            text=text,
            finish_reason=finish,  # type: ignore[arg-type]
            raw_finish_reason=raw_finish,
            input_tokens=None if usage is None else usage.get("prompt_tokens"),
            output_tokens=None if usage is None else usage.get("completion_tokens"),
            reasoning_tokens=reasoning,
            requested_model=self.spec.model,
            reported_model=completion.get("model") or None,
            request_id=headers.get("x-request-id"),
            response_id=completion.get("id") or None,
            flags=self._flags(text, finish, bool(refusal_text)),
            refusal=refusal_text,
        )
        return reply, headers
