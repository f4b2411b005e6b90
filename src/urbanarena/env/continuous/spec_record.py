"""The shape check every dynamics spec record (``dynamics``, its closures, pedestrians, vehicles) starts with."""

from __future__ import annotations

from typing import Any, Collection, Mapping

from urbanarena.errors import TaskFormatError


def check_record(d: Any, record: str, what: str, key_noun: str, keys: Collection[str]) -> Mapping[str, Any]:
    """``d`` if it is a mapping whose keys all lie in ``keys``.

    Args:
        record: where the record is (named in the error). what: the record's noun in "``what`` must be an
            object". key_noun: its noun in "unknown ``key_noun`` keys".
    Raises:
        TaskFormatError: not a mapping, or unknown keys (listed, sorted).
    """
    if not isinstance(d, Mapping):
        raise TaskFormatError(None, record, f"{what} must be an object, got {type(d).__name__}")
    unknown = set(d) - set(keys)
    if unknown:
        raise TaskFormatError(None, record, f"unknown {key_noun} keys {sorted(unknown)}")
    return d


__all__ = ["check_record"]
