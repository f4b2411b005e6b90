"""Typed errors of the model clients.

Every error message is safe to store: none contains an API key (keys are
never held in the objects that build these messages).
"""

from __future__ import annotations

from urbanarena.errors import UrbanArenaError


class ModelClientError(UrbanArenaError):
    """Base class of the model-client errors."""


class ModelSpecError(ModelClientError, ValueError):
    """A model spec string (``provider:model`` ...) cannot be parsed."""


class CredentialsInURLError(ModelSpecError):
    """A model spec's endpoint URL carries a credential (userinfo or a secret-looking query parameter).

    Attributes:
        found: what was found (names, never values).
        variable: the environment variable to put the key in instead.
    """

    def __init__(self, redacted_url: str, found: list[str], variable: str):
        self.found = list(found)
        self.variable = variable
        super().__init__(f"model endpoint {redacted_url!r} carries a credential ({', '.join(found)}); keys are "
                         f"never taken from URLs: remove it and set the environment variable {variable} instead")


class MissingAPIKeyError(ModelClientError):
    """The environment variable that must hold the provider's API key is unset.

    Attributes:
        variables: names of the variables that were consulted (names only,
            never values).
    """

    def __init__(self, provider: str, variables: list[str]):
        self.provider = provider
        self.variables = list(variables)
        super().__init__(f"no API key for provider {provider!r}: set the environment variable {' or '.join(variables)}")


class ImageEncodingError(ModelClientError, ValueError):
    """An image is not an RGB uint8 array or cannot be brought under the limits."""


class ModelRequestError(ModelClientError):
    """The provider rejected a request with a non-retryable status (4xx other than 429).

    Attributes:
        status_code: HTTP status.
        fault_type: counter key (``http_400`` ...).
    """

    def __init__(self, message: str, status_code: int | None, fault_type: str):
        self.status_code = status_code
        self.fault_type = fault_type
        super().__init__(message)


class ModelTransportError(ModelClientError):
    """Transport faults persisted after the retry limit.

    Attributes:
        fault_type: counter key of the last fault (``timeout``, ``connection``,
            ``http_429``, ``http_503`` ...).
        attempts: requests sent, the first one included.
    """

    def __init__(self, message: str, fault_type: str, attempts: int):
        self.fault_type = fault_type
        self.attempts = attempts
        super().__init__(message)


class CacheMissError(ModelClientError, LookupError):
    """``read-only`` cache mode and the request is not in the cache (no network call was made).

    Attributes:
        key: the cache key (sha256 hex).
    """

    def __init__(self, key: str, path: str):
        self.key = key
        self.path = path
        super().__init__(f"response cache {path}: no entry for request {key} (cache mode read-only; no API call made)")


class BudgetExceeded(ModelClientError):
    """The run's budget (``max_usd`` or ``max_requests``) would be exceeded by the next request.

    Raised *before* the request is sent, so a run that catches it stops
    cleanly and can be resumed (the response cache holds every reply paid for).

    Attributes:
        limit: ``"max_usd"`` or ``"max_requests"``.
        cap: the configured cap.
        used: what had been used when the request was refused (USD or requests).
        requested: what the refused request would have added (upper-bound USD or 1).
    """

    def __init__(self, limit: str, cap: float, used: float, requested: float):
        self.limit = limit
        self.cap = cap
        self.used = used
        self.requested = requested
        super().__init__(f"budget {limit}={cap:g} reached: used {used:g}, next request needs {requested:g}")


class ReplyFault(ModelClientError):
    """One attempt got a reply that cannot be used as one: a transport fault of its own kind,
    counted and retried by the retry policy like a timeout or a 5xx.

    Attributes:
        kind: counter key: ``timeout`` (the attempt deadline passed while the reply was arriving),
            ``reply_too_large`` (the body passed ``max_reply_bytes``), ``not_json`` (a 200 whose body is
            not a JSON completion of the provider's API), ``truncated_reply``, ``connection``, ``protocol_error``
            (the body broke off while it streamed: :mod:`urbanarena.agents.clients.transport`).
    """

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)
