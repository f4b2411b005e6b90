"""Model clients: OpenAI / OpenAI-compatible and Anthropic behind one request/reply type.

Typical use (an agent)::

    from urbanarena.agents.clients import (
        make_client, ModelRequest, Message, Text, Image, GenerationSettings, ImageSettings,
        ResponseCache, BudgetGuard, UsageCounters)

    client = make_client("openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-vl",
                         generation=GenerationSettings(temperature=1.0, max_output_tokens=8192),
                         images=ImageSettings(format="jpeg", jpeg_quality=90, max_side_px=1568),
                         cache=ResponseCache(run_dir / "responses.sqlite", "read-write"),
                         budget=BudgetGuard(max_usd=5.0, ledger_path=run_dir / "budget.sqlite"))
    counters = UsageCounters()                      # one per episode
    reply = client.complete(ModelRequest([Message("user", [Image(view_rgb), Text(prompt)])],
                                         system=system_prompt), counters)
    reply.text, reply.flags, reply.finish_reason, counters.as_dict()

Modules: :mod:`.spec` (spec strings, keys from the environment), :mod:`.types`
(settings, messages, replies, counters), :mod:`.images` (JPEG/PNG encoding
under limits), :mod:`.retry` (our retry policy), :mod:`.cache` (response
cache and audit bundle), :mod:`.cost` (image-token rules, price table,
``--dry-run`` estimate, budget guard), :mod:`.openai_client`,
:mod:`.anthropic_client`.
"""

from __future__ import annotations

from typing import Any

from urbanarena.agents.clients.base import ModelClient
from urbanarena.agents.clients.cache import CACHE_MODES, ResponseCache, cache_key, request_summary
from urbanarena.agents.clients.cost import (
    BudgetGuard,
    ModelPrice,
    PriceTable,
    RequestShape,
    RunEstimate,
    area_tokens,
    estimate_run,
    openai_patch_tokens,
    openai_tile_tokens,
    text_tokens,
)
from urbanarena.agents.clients.errors import (
    BudgetExceeded,
    CacheMissError,
    ImageEncodingError,
    MissingAPIKeyError,
    ModelClientError,
    ModelRequestError,
    ModelSpecError,
    ModelTransportError,
)
from urbanarena.agents.clients.images import EncodedImage, encode_image, planned_size
from urbanarena.agents.clients.retry import RetryPolicy
from urbanarena.agents.clients.spec import ModelSpec, parse_model_spec
from urbanarena.agents.clients.types import (
    GenerationSettings,
    Image,
    ImageSettings,
    Message,
    ModelReply,
    ModelRequest,
    Text,
    UsageCounters,
)


def make_client(spec: str | ModelSpec, **kwargs: Any) -> ModelClient:
    """Build the client for a model spec string (or parsed :class:`ModelSpec`).

    Args:
        spec: ``openai:MODEL``, ``openai-compatible:URL:MODEL``,
            ``anthropic:MODEL`` (see :mod:`.spec`).
        **kwargs: :class:`ModelClient` keyword arguments (``generation``,
            ``images``, ``timeout_s``, ``retry``, ``cache``, ``budget``,
            ``prices``, ``api_key_env``); OpenAI also ``max_tokens_param``.
    Raises:
        ModelSpecError: bad spec. MissingAPIKeyError: key variable unset.
    """
    s = parse_model_spec(spec) if isinstance(spec, str) else spec
    if s.provider == "anthropic":  # each SDK is imported only when used (anthropic takes seconds)
        from urbanarena.agents.clients.anthropic_client import AnthropicClient

        return AnthropicClient(s, **kwargs)
    from urbanarena.agents.clients.openai_client import OpenAIClient

    return OpenAIClient(s, **kwargs)


__all__ = [
    "BudgetExceeded", "BudgetGuard", "CACHE_MODES", "CacheMissError", "EncodedImage", "GenerationSettings", "Image",
    "ImageEncodingError", "ImageSettings", "Message", "MissingAPIKeyError", "ModelClient", "ModelClientError",
    "ModelPrice", "ModelReply", "ModelRequest", "ModelRequestError", "ModelSpec", "ModelSpecError",
    "ModelTransportError", "PriceTable", "RequestShape", "ResponseCache", "RetryPolicy", "RunEstimate", "Text",
    "UsageCounters", "area_tokens", "cache_key", "encode_image", "estimate_run", "make_client", "openai_patch_tokens",
    "openai_tile_tokens", "parse_model_spec", "planned_size", "request_summary", "text_tokens",
]
