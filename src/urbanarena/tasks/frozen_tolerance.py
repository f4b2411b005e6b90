"""A coarse fingerprint of a frozen suite's images, verified within a tolerance beside the bit-exact hashes (ours).

A frozen suite pins every image by the sha256 of its pixels (:mod:`urbanarena.tasks.frozen`). llvmpipe compiles
its shaders for the CPU it runs on, so another CPU family (e.g. one with AVX-512) rounds some scattered pixels of a
photo-style image differently although every recorded identity (Mesa, LLVM, OpenCV, assets) is the same: the
sha256 then differs for a drawing that is, to the eye and to an agent, the same image.

Beside each ``pixel_sha256`` a suite frozen or redrawn since this module stores a *coarse fingerprint*: the image's
grey level (the mean of R, G and B) averaged over each block of a fixed :data:`GRID` (16 columns x 9 rows,
block edges at ``round(i * W / 16)`` and ``round(j * H / 9)``), each mean stored as ``round(mean * SCALE)``
(:data:`SCALE` = 64, i.e. 1/64 grey level) in a little-endian uint16, base64-encoded, prefixed by the image size:
``"640x480:<base64 of 288 bytes>"`` (392 characters). The manifest names the scheme once
(:func:`scheme`, key ``coarse_fingerprint``).

An image whose sha256 differs but whose fingerprint's largest block difference (:func:`max_block_diff`, grey
levels) is at most :data:`TOLERANCE_GREY` counts as *drawn within tolerance*, not as differing. Chosen with
evidence (``benchmarks/bench_frozen_tolerance.py``, docs/frozen-suites.md): what another CPU's code generation
(``GALLIUM_OVERRIDE_CPU_CAPS``) and a sub-pixel turn of a reference camera move is under it, what a person moved, a
reference camera turned by a pixel or a brightness change of 2 grey levels over a block moves is above it
(panoramas, whose check only warns, overlap in the measurements: a far person moved 0.3 m stays under it, a
sub-pixel turn can exceed it).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Mapping

import numpy as np

#: blocks of the fingerprint grid, (columns, rows)
GRID = (16, 9)
#: fixed-point scale of a stored block mean (1/64 grey level)
SCALE = 64
#: the largest block-mean difference, in grey levels (0..255), still counted as the same image: between what
#: another code generation of llvmpipe (<= 0.08) or a 0.06-pixel turn of a reference camera (<= 0.56) moves and
#: what a real change of a reference image moves (a 1.3-pixel turn >= 3.2, one person moved 0.3 m >= 1.09, +2 grey
#: levels over a block 2.0); measured: docs/frozen-suites.md, "Another CPU: images drawn within tolerance"
TOLERANCE_GREY = 0.75
#: version of the fingerprint scheme (recorded in the manifest's ``coarse_fingerprint``)
VERSION = 1

_FORMAT = re.compile(r"^(\d+)x(\d+):([A-Za-z0-9+/=]+)$")


def scheme() -> dict[str, Any]:
    """The manifest's ``coarse_fingerprint`` entry: how the fingerprints were computed (version, grid, scale)."""
    return {"version": VERSION, "grid": list(GRID), "scale": SCALE, "grey": "mean of R, G, B"}


def block_means(img: np.ndarray, grid: tuple[int, int] = GRID) -> np.ndarray:
    """Mean grey level (mean of the channels) of each block of ``grid`` over ``img``.

    Args:
        img: ``(H, W)`` or ``(H, W, C)`` uint8 (or any numeric) image, ``H >= rows``, ``W >= columns``.
        grid: ``(columns, rows)``.
    Returns: float64 ``(rows, columns)``, grey levels.
    Raises:
        ValueError: an image smaller than the grid or of another rank.
    """
    a = np.asarray(img, dtype=np.float64)
    if a.ndim == 3:
        a = a.mean(axis=2)
    if a.ndim != 2:
        raise ValueError(f"block_means: expected an (H, W) or (H, W, C) image, got shape {np.shape(img)}")
    cols, rows = grid
    h, w = a.shape
    if h < rows or w < cols:
        raise ValueError(f"block_means: a {w}x{h} image is smaller than the {cols}x{rows} grid")
    ys = np.round(np.arange(rows + 1) * h / rows).astype(int)
    xs = np.round(np.arange(cols + 1) * w / cols).astype(int)
    # summed-area table: each block's sum from four corners
    s = np.zeros((h + 1, w + 1))
    s[1:, 1:] = a.cumsum(0).cumsum(1)
    tot = s[ys[1:]][:, xs[1:]] - s[ys[:-1]][:, xs[1:]] - s[ys[1:]][:, xs[:-1]] + s[ys[:-1]][:, xs[:-1]]
    area = np.outer(np.diff(ys), np.diff(xs))
    return tot / area


def coarse_fingerprint(img: np.ndarray) -> str:
    """The coarse fingerprint of an RGB (or grey) image: ``"<W>x<H>:<base64>"`` (module docstring).

    Raises:
        ValueError: as :func:`block_means`.
    """
    m = block_means(img)
    q = np.round(m * SCALE).astype("<u2")
    h, w = np.shape(img)[:2]
    return f"{w}x{h}:" + base64.b64encode(q.tobytes()).decode("ascii")


def decode(fp: str) -> tuple[tuple[int, int], np.ndarray]:
    """``((W, H), block means (rows, columns) float64 grey levels)`` of a stored fingerprint.

    Raises:
        ValueError: not a fingerprint of this scheme.
    """
    m = _FORMAT.match(str(fp))
    if not m:
        raise ValueError(f"not a coarse fingerprint: {str(fp)[:40]!r}")
    raw = base64.b64decode(m.group(3))
    cols, rows = GRID
    if len(raw) != 2 * cols * rows:
        raise ValueError(f"coarse fingerprint of {len(raw)} bytes, expected {2 * cols * rows}")
    q = np.frombuffer(raw, dtype="<u2").reshape(rows, cols)
    return (int(m.group(1)), int(m.group(2))), q.astype(np.float64) / SCALE


def max_block_diff(a: str, b: str) -> float:
    """Largest absolute block-mean difference between two fingerprints, grey levels; ``inf`` when the image
    sizes differ.

    Raises:
        ValueError: either is not a fingerprint (:func:`decode`).
    """
    (sa, ma), (sb, mb) = decode(a), decode(b)
    if sa != sb:
        return float("inf")
    return float(np.abs(ma - mb).max())


def within_tolerance(want: str | None, img_or_fp: np.ndarray | str, tolerance: float = TOLERANCE_GREY) -> bool:
    """Whether an image (or its fingerprint) agrees with the stored fingerprint ``want`` within ``tolerance`` grey
    levels in every block; ``False`` when ``want`` is missing or unreadable (a manifest without fingerprints is
    exact only)."""
    if not want:
        return False
    got = img_or_fp if isinstance(img_or_fp, str) else coarse_fingerprint(img_or_fp)
    try:
        return max_block_diff(want, got) <= tolerance
    except ValueError:
        return False


def split_differ(differ: list[str], want: Mapping[str, str | None], got: Mapping[str, str]) -> tuple[list, list]:
    """``(differ, within)``: of the names whose sha256 differs, those whose stored fingerprint (``want``, absent:
    exact only) agrees with this drawing's (``got``) within :data:`TOLERANCE_GREY` move to ``within``."""
    out, within = [], []
    for name in differ:
        (within if name in got and within_tolerance(want.get(name), got[name]) else out).append(name)
    return out, within


def apply_tolerance(check: dict[str, Any], want_assets: Mapping[str, str | None], got_assets: Mapping[str, str],
                    want_panoramas: Mapping[str, str | None], got_panoramas: Mapping[str, str]) -> dict[str, Any]:
    """Move the images and panoramas of a materialize ``check`` (``assets_differ``, ``panoramas_differ``) whose
    fingerprints agree within :data:`TOLERANCE_GREY` to ``assets_within_tolerance`` / ``panoramas_within_tolerance``
    and record ``tolerance`` (the scheme, ``max_block_diff_grey`` and the largest block difference among the
    images moved, ``largest_within_grey``). ``want_*``: the manifest's fingerprints by name; ``got_*``: this
    drawing's. Returns ``check`` (changed in place); ``matches`` is the caller's to set."""
    check["assets_differ"], check["assets_within_tolerance"] = split_differ(
        list(check.get("assets_differ") or []), want_assets, got_assets)
    check["panoramas_differ"], check["panoramas_within_tolerance"] = split_differ(
        list(check.get("panoramas_differ") or []), want_panoramas, got_panoramas)
    moved = [max_block_diff(want_assets[n], got_assets[n]) for n in check["assets_within_tolerance"]]
    moved += [max_block_diff(want_panoramas[n], got_panoramas[n]) for n in check["panoramas_within_tolerance"]]
    check["tolerance"] = {**scheme(), "max_block_diff_grey": TOLERANCE_GREY,
                          "largest_within_grey": round(max(moved), 4) if moved else None}
    return check


def describe_tolerance(check: Mapping[str, Any]) -> str | None:
    """One line naming how many images and panoramas were drawn within the tolerance (``None`` when none were)."""
    a, p = check.get("assets_within_tolerance") or [], check.get("panoramas_within_tolerance") or []
    if not a and not p:
        return None
    parts = []
    if a:
        parts.append(f"{len(a)} of {check.get('assets_checked')} reference images")
    if p:
        parts.append(f"{len(p)} of {check.get('panoramas_checked')} fingerprint panoramas")
    tol = (check.get("tolerance") or {}).get("max_block_diff_grey", TOLERANCE_GREY)
    return (f"suite {check.get('suite')}: {' and '.join(parts)} drawn here within tolerance of the frozen ones "
            f"(not bit-identical; every {GRID[0]}x{GRID[1]} block mean within {tol} grey levels: another CPU's "
            "rounding); the suite verifies")


__all__ = ["GRID", "SCALE", "TOLERANCE_GREY", "VERSION", "apply_tolerance", "block_means", "coarse_fingerprint",
           "decode", "describe_tolerance", "max_block_diff", "scheme", "split_differ", "within_tolerance"]
