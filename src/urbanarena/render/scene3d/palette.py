"""Deterministic colours: every choice is a function of an id string (SHA-256), never of a random state.

Facade colours are a palette of plastered and brick tones common in Nordic
city centres (ochre, cream, pale yellow, light grey, salmon, brick red, pastel
green/blue), each jittered a little per building so neighbours differ. Sign
colours come from a palette of saturated panel colours with white or black
text, whichever contrasts more (WCAG relative luminance).
"""

from __future__ import annotations

import hashlib

FACADE_PALETTE: tuple[tuple[int, int, int], ...] = (
    (214, 180, 120),  # ochre
    (232, 221, 190),  # cream
    (236, 214, 140),  # pale yellow
    (196, 196, 190),  # light grey
    (218, 160, 135),  # salmon
    (160, 82, 62),    # brick red
    (178, 200, 170),  # pastel green
    (170, 190, 210),  # pastel blue
    (226, 200, 170),  # sand
    (150, 140, 130),  # dark grey stone
)

SIGN_PALETTE: tuple[tuple[int, int, int], ...] = (
    (20, 40, 90),     # navy
    (150, 20, 30),    # dark red
    (20, 90, 50),     # dark green
    (30, 30, 30),     # black
    (245, 245, 240),  # white
    (240, 200, 40),   # yellow
    (90, 30, 90),     # purple
    (200, 90, 20),    # orange
)


def stable_unit(key: str, salt: str = "") -> float:
    """A number in ``[0, 1)`` determined by ``key`` and ``salt`` (first 8 bytes of SHA-256)."""
    h = hashlib.sha256(f"{salt}\x00{key}".encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


def stable_index(key: str, n: int, salt: str = "") -> int:
    """An index in ``range(n)`` determined by ``key`` and ``salt``."""
    return min(n - 1, int(stable_unit(key, salt) * n))


def facade_colour(building_id: str) -> tuple[int, int, int]:
    """Facade RGB of a building: a palette tone jittered by up to +-12 per channel."""
    base = FACADE_PALETTE[stable_index(building_id, len(FACADE_PALETTE), "facade")]
    j = [int(round((stable_unit(building_id, f"jitter{c}") - 0.5) * 24)) for c in range(3)]
    return tuple(max(0, min(255, b + d)) for b, d in zip(base, j))  # type: ignore[return-value]


def relative_luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0..1)."""
    def lin(c: float) -> float:
        c = c / 255.0
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio ``(L1 + 0.05) / (L2 + 0.05)`` (1..21)."""
    la, lb = relative_luminance(a), relative_luminance(b)
    hi, lo = max(la, lb), min(la, lb)
    return (hi + 0.05) / (lo + 0.05)


def sign_colours(poi_id: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """``(background, text)`` of a POI's sign: a palette colour and the more contrasting of white/black."""
    bg = SIGN_PALETTE[stable_index(poi_id, len(SIGN_PALETTE), "sign")]
    white, black = (255, 255, 255), (0, 0, 0)
    fg = white if contrast_ratio(bg, white) >= contrast_ratio(bg, black) else black
    return bg, fg
