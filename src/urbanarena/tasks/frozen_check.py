"""Refusing a frozen suite whose reference images this machine draws differently (issue 27 item 6).

A frozen suite pins every reference image (maps, the localization grid, landmark photos) by the sha256 of
its pixels (:mod:`urbanarena.tasks.frozen`). Another OpenCV release (5.1.0 instead of the locked 5.0.0
redraws every map), another OpenGL driver or font draws other pixels: the agent would then receive other
inputs under the same suite name. :func:`enforce_frozen_images` turns such a check into
:class:`SuiteImagesDifferError` (exit 2, the files and the likely reason named) unless the user accepts
the redrawn images explicitly — ``--accept-redrawn-images`` on ``run``, ``demo`` and ``play``, or the
environment variable :data:`ACCEPT_ENV` = ``1`` for every other entry point (Gym, harnesses, exports) —
in which case the check records ``accepted_redrawn_images: true`` (stored in ``run.json``'s
``tasks.suite_check`` and shown by ``summary`` and ``report``).

Fingerprint panoramas (the views, not the suite's images) that differ stay a warning: views depend on the
GL driver (a GPU draws other pixels than llvmpipe) and the suite's inputs are unchanged. Ours.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from urbanarena.errors import UrbanArenaError

#: environment variable that accepts redrawn frozen images everywhere (``1``/``true``/``yes``)
ACCEPT_ENV = "URBANARENA_ACCEPT_REDRAWN_IMAGES"
#: how many differing files the error names before "and N more"
NAMED_FILES = 5
#: the identity keys that decide how reference images are drawn (render_identity)
_DRAWING_KEYS = ("opencv", "gl", "font", "renderer_version", "realistic", "population", "sign_families")


class SuiteImagesDifferError(UrbanArenaError, ValueError):
    """This machine draws a frozen suite's reference images differently from the manifest (exit 2)."""


def accept_from_env() -> bool:
    """Whether :data:`ACCEPT_ENV` asks to accept redrawn images."""
    return os.environ.get(ACCEPT_ENV, "").strip().lower() in ("1", "true", "yes")


def likely_reason(check: Mapping[str, Any]) -> str:
    """What differs between the manifest's renderer identity and this machine's (OpenCV version, GL driver,
    font ...), as one phrase; the OpenCV version is compared even when no panorama was drawn here."""
    want = check.get("reference_renderer") or {}
    have = dict(check.get("renderer") or {})
    if "opencv" not in have:
        try:
            import cv2

            have["opencv"] = cv2.__version__
        except ImportError:  # pragma: no cover - opencv is a core dependency
            pass
    parts = []
    for key in _DRAWING_KEYS:
        if key in want and key in have and want[key] != have[key]:
            if key == "opencv":
                parts.append(f"OpenCV {have[key]} here, {want[key]} in the manifest")
            elif key == "gl":
                parts.append(f"GL driver {have[key].get('GL_RENDERER', have[key])!s} here, "
                             f"{want[key].get('GL_RENDERER', want[key])!s} in the manifest")
            else:
                parts.append(f"{key} differs")
    return "; ".join(parts) if parts else "no difference in the recorded renderer identity (another library version?)"


def enforce_frozen_images(check: dict[str, Any] | None, accept: bool | None = None) -> dict[str, Any] | None:
    """Refuse a frozen suite whose reference images differ here, or record that they were accepted.

    Args:
        check: :func:`urbanarena.tasks.frozen_materialize.materialize`'s check (``None``: not a frozen suite, passed on).
        accept: accept redrawn images; ``None`` reads :data:`ACCEPT_ENV`.
    Returns: the check, with ``accepted_redrawn_images`` set when images differ and were accepted.
    Raises:
        SuiteImagesDifferError: images differ and ``accept`` is false: the message names the suite, up to
            :data:`NAMED_FILES` files, the likely reason and the override.
    """
    if not check or not check.get("assets_differ"):
        return check
    if accept is None:
        accept = accept_from_env()
    if accept:
        check["accepted_redrawn_images"] = True
        return check
    files = list(check["assets_differ"])
    named = ", ".join(files[:NAMED_FILES]) + (f" and {len(files) - NAMED_FILES} more" if len(files) > NAMED_FILES else "")
    raise SuiteImagesDifferError(
        f"frozen suite {check.get('suite')}: {len(files)} of {check.get('assets_checked')} reference images drawn "
        f"here differ from the manifest ({named}); likely reason: {likely_reason(check)}. Install with the lock "
        f"(pip install -c constraints.txt ...) to draw the frozen images, or pass --accept-redrawn-images "
        f"(or set {ACCEPT_ENV}=1) to run on this machine's drawings, marked as such in run.json")


__all__ = ["ACCEPT_ENV", "NAMED_FILES", "SuiteImagesDifferError", "accept_from_env", "enforce_frozen_images",
           "likely_reason"]
