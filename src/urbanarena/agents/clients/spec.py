"""Model spec strings and where API keys come from.

A model spec names the provider, optionally an endpoint, and the model::

    openai:gpt-4o                                    # api.openai.com, key OPENAI_API_KEY
    openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-vl
    openai-compatible:http://localhost:11434/v1:llava:13b   # model names may hold colons
    anthropic:claude-sonnet-4-5                       # api.anthropic.com, key ANTHROPIC_API_KEY
    anthropic:http://127.0.0.1:9000:claude-x          # any provider may name its endpoint

Parsing rule for an endpoint: after ``provider:`` comes ``http://`` or
``https://``, then a host (a name, an IPv4 address or a bracketed IPv6
address) with an optional ``:port`` of digits, then an optional path that
holds no colon, then ``:`` and the model name (the rest of the string, which
may itself contain colons). So the URL's own colons (scheme, port) never split
the model name.

API keys are read from environment variables only, at client construction,
and never stored in a :class:`ModelSpec`, a config, a cache or a log:

* ``openai`` — ``OPENAI_API_KEY`` (required);
* ``anthropic`` — ``ANTHROPIC_API_KEY`` (required);
* ``openai-compatible`` — first set of: the per-endpoint
  variable ``URBANARENA_API_KEY_<HOST>_<PORT>`` (host upper-cased, every
  character outside ``A-Z0-9`` replaced by ``_``; ``_<PORT>`` only when the URL
  names a port; e.g. ``URBANARENA_API_KEY_GENERATIVELANGUAGE_GOOGLEAPIS_COM``,
  ``URBANARENA_API_KEY_127_0_0_1_8000``), then ``OPENAI_COMPATIBLE_API_KEY``.
  When none is set the request carries a placeholder key (local servers such
  as vLLM or Ollama accept anything). ``OPENAI_API_KEY`` is deliberately *not*
  used for arbitrary endpoints, so an OpenAI key is never sent to a third party.

Any provider: an explicit ``api_key_env`` (argument of :func:`resolve_api_key`
and of the clients) names the one variable to read; unset, it is an error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from urbanarena.agents.clients.errors import CredentialsInURLError, MissingAPIKeyError, ModelSpecError
from urbanarena.redact import redact_urls, url_credentials

PROVIDERS = ("openai", "openai-compatible", "anthropic")
"""Provider ids accepted in a model spec."""

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}

NO_KEY_PLACEHOLDER = "no-key"
"""Sent as the bearer token to an OpenAI-compatible endpoint when no key variable is set."""

_ENDPOINT_RE = re.compile(
    r"""^(?P<url>https?://                       # scheme
          (?:\[[0-9A-Fa-f:.]+\]|[^/:\s\[\]@]+)   # host: [IPv6] or name/IPv4
          (?::\d+)?+                             # optional port (possessive: never re-read as the model)
          (?:/[^:\s]*)?)                         # optional path without colons
        :(?P<model>\S.*)$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec (no secret inside).

    Attributes:
        provider: ``openai``, ``openai-compatible`` or ``anthropic``.
        model: model name as sent to the provider (the requested snapshot).
        base_url: endpoint URL; ``None`` means the provider's default
            (:data:`DEFAULT_BASE_URLS`).
    """

    provider: str
    model: str
    base_url: str | None = None

    @property
    def endpoint(self) -> str:
        """The URL requests go to (``base_url`` or the provider default)."""
        return self.base_url or DEFAULT_BASE_URLS[self.provider]

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form for configs and metadata (holds no key)."""
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url}

    def __str__(self) -> str:
        return f"{self.provider}:{self.base_url + ':' if self.base_url else ''}{self.model}"


def parse_model_spec(spec: str) -> ModelSpec:
    """Parse ``provider:[endpoint:]model`` (see the module docstring).

    Args:
        spec: e.g. ``openai:gpt-4o``,
            ``openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-vl``.
    Returns: the :class:`ModelSpec`.
    Raises:
        ModelSpecError: unknown provider, empty model, malformed endpoint (a port outside 1-65535 included), or
            ``openai-compatible`` without an endpoint.
        CredentialsInURLError: the endpoint carries userinfo or a secret-looking query value (its message
            names the key variable to use and never the value).
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ModelSpecError(f"model spec {spec!r}: expected 'provider:model' with provider one of {', '.join(PROVIDERS)}")
    provider, rest = spec.split(":", 1)
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        raise ModelSpecError(f"model spec {spec!r}: unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
    base_url: str | None = None
    if rest.startswith(("http://", "https://")):
        found = url_credentials(rest)
        if found:
            clean = rest.split("?", 1)[0]
            clean = clean.split("://", 1)[0] + "://" + clean.split("://", 1)[1].rpartition("@")[2] if "@" in clean else clean
            variable = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}.get(provider)
            if variable is None:
                m0 = _ENDPOINT_RE.match(clean) or _ENDPOINT_RE.match(clean + ":m")
                variable = endpoint_key_variable(m0.group("url")) if m0 else "OPENAI_COMPATIBLE_API_KEY"
                variable += " (or OPENAI_COMPATIBLE_API_KEY)"
            raise CredentialsInURLError(redact_urls(rest), found, variable)
        m = _ENDPOINT_RE.match(rest)
        if m is None:
            raise ModelSpecError(
                f"model spec {spec!r}: cannot split endpoint and model; expected "
                f"'{provider}:http(s)://host[:port][/path]:model' (the path may not contain ':')"
            )
        base_url, model = m.group("url").rstrip("/"), m.group("model")
        parts = urlsplit(base_url)
        if not parts.hostname:
            raise ModelSpecError(f"model spec {spec!r}: endpoint {base_url!r} has no host")
        try:
            port = parts.port
        except ValueError:
            port = -1
        if port is not None and not 1 <= port <= 65535:
            raise ModelSpecError(f"model spec {spec!r}: endpoint {base_url!r} names port {parts.netloc.rpartition(':')[2]}, "
                                 "outside 1-65535")
    else:
        model = rest
    model = model.strip()
    if not model:
        raise ModelSpecError(f"model spec {spec!r}: empty model name")
    if provider == "openai-compatible" and base_url is None:
        raise ModelSpecError(
            f"model spec {spec!r}: openai-compatible needs an endpoint, e.g. 'openai-compatible:http://127.0.0.1:8000/v1:{model}'"
        )
    return ModelSpec(provider=provider, model=model, base_url=base_url)


def endpoint_key_variable(base_url: str) -> str:
    """The per-endpoint key variable ``URBANARENA_API_KEY_<HOST>[_<PORT>]`` for ``base_url``."""
    parts = urlsplit(base_url)
    host = (parts.hostname or "").upper()
    name = re.sub(r"[^A-Z0-9]", "_", host)
    if parts.port is not None:
        name += f"_{parts.port}"
    return f"URBANARENA_API_KEY_{name}"


def key_variables(spec: ModelSpec, api_key_env: str | None = None) -> list[str]:
    """Names of the environment variables consulted for ``spec``'s key, in order."""
    names: list[str] = [api_key_env] if api_key_env else []
    if spec.provider == "openai":
        names.append("OPENAI_API_KEY")
    elif spec.provider == "anthropic":
        names.append("ANTHROPIC_API_KEY")
    else:
        names += [endpoint_key_variable(spec.endpoint), "OPENAI_COMPATIBLE_API_KEY"]
    return names


def resolve_api_key(spec: ModelSpec, api_key_env: str | None = None) -> str:
    """Read the API key for ``spec`` from the environment.

    Returns: the key, or :data:`NO_KEY_PLACEHOLDER` for an
        ``openai-compatible`` endpoint with no key variable set.
    Raises:
        MissingAPIKeyError: ``openai``/``anthropic`` and no variable is set,
            or ``api_key_env`` is given and unset (an explicit variable is the
            only source then); the message names the variables, never a value.
    """
    if api_key_env:
        value = os.environ.get(api_key_env)
        if value:
            return value
        raise MissingAPIKeyError(spec.provider, [api_key_env])
    names = key_variables(spec)
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    if spec.provider == "openai-compatible":
        return NO_KEY_PLACEHOLDER
    raise MissingAPIKeyError(spec.provider, names)
