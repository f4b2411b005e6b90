"""What every picture-pins module shares (:mod:`urbanarena.world.picture_pins`,
:mod:`urbanarena.world.importers.panoramax.pins`): the block version, the error naming pictures, the licence
summary."""

from __future__ import annotations

from typing import Any, Mapping

from urbanarena.errors import UrbanArenaError

#: version of the ``pictures`` block (a key of a frozen suite's manifest)
PINS_VERSION = 1
#: how many problem pictures an error message names before "..."
NAMED_IN_MESSAGE = 8


class PinnedPictureError(UrbanArenaError):
    """Pinned pictures are missing or differ from their pins. ``problems``: ``{picture id: what is wrong}``
    (every picture found wrong, in pin order); the message names the first ones and the source."""

    def __init__(self, where: str, problems: Mapping[str, str]):
        self.where = where
        self.problems = dict(problems)
        shown = "; ".join(f"picture {pid}: {why}" for pid, why in list(self.problems.items())[:NAMED_IN_MESSAGE])
        more = f" (and {len(self.problems) - NAMED_IN_MESSAGE} more)" if len(self.problems) > NAMED_IN_MESSAGE else ""
        super().__init__(f"{where}: {len(self.problems)} pinned picture(s) missing or changed: {shown}{more}")


def licence_summary(pics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{licence: {"pictures": n, "authors": [sorted]}}`` of pin entries (``licence``/``author`` keys; missing
    ones count as ``"unknown"``), sorted by licence."""
    out: dict[str, dict[str, Any]] = {}
    for p in pics:
        e = out.setdefault(p.get("licence") or "unknown", {"pictures": 0, "authors": set()})
        e["pictures"] += 1
        e["authors"].add(p.get("author") or "unknown")
    return {k: {"pictures": v["pictures"], "authors": sorted(v["authors"])} for k, v in sorted(out.items())}

__all__ = ["NAMED_IN_MESSAGE", "PINS_VERSION", "PinnedPictureError", "licence_summary"]
