"""Credentials inside URLs: find them (to refuse them) and redact them (wherever a URL is stored or printed).

A URL carries a credential when it has userinfo (``http://user:KEY@host``, ``http://KEY@host``) or a query
parameter whose name looks like one (:data:`SECRET_PARAMS`, case-insensitive, ``-`` read as ``_``).
:func:`url_credentials` names what it found (never the values); :func:`redact_urls` replaces the values in any
text by ``[redacted]`` (used for ``run.json``, the store's ``error`` column and ``run.log``, after model specs
with credentials are already refused at parsing).
"""

from __future__ import annotations

import re
from typing import Any

#: query parameter names treated as credentials
SECRET_PARAMS = ("key", "api_key", "apikey", "token", "access_token", "auth", "auth_token", "password", "passwd",
                 "pwd", "secret", "client_secret", "sig", "signature", "x_api_key", "bearer")
REDACTED = "[redacted]"

_USERINFO = re.compile(r"(?i)\b(https?://)([^/\s@?#]*)@")
_QUERY = re.compile(r"(?i)([?&;](?:" + "|".join(p.replace("_", "[_-]") for p in SECRET_PARAMS) + r")=)([^&#\s'\"]*)")


def url_credentials(url: str) -> list[str]:
    """What in ``url`` looks like a credential: ``"userinfo"`` and/or ``"query parameter NAME"``; ``[]``: none."""
    found: list[str] = []
    if _USERINFO.search(url):
        found.append("userinfo (user:password@)")
    for m in _QUERY.finditer(url):
        if m.group(2):
            found.append(f"query parameter {m.group(1)[1:-1]!r}")
    return found


def redact_urls(text: str) -> str:
    """``text`` with URL userinfo and secret-looking query values replaced by ``[redacted]``."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _QUERY.sub(lambda m: m.group(1) + (REDACTED if m.group(2) else ""), text)


def redact_tree(value: Any) -> Any:
    """:func:`redact_urls` applied to every string in a JSON-like tree (dict keys included)."""
    if isinstance(value, str):
        return redact_urls(value)
    if isinstance(value, dict):
        return {redact_tree(k): redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v) for v in value]
    return value


__all__ = ["REDACTED", "SECRET_PARAMS", "redact_tree", "redact_urls", "url_credentials"]
