"""Perspective cut: our :class:`~urbanarena.render.views.ViewRenderer` vs py360convert's ``e2p``.

Both cut a 640 x 360, 90 degree view from the same 5760 x 2880 panorama (the size
of the GoPro frames in ``shared/data/panoramas/geovisio``; the image is
:func:`~urbanarena.bench.scenes.synthetic_panorama`, content does not change
either cost) at a new yaw on every call (``37.3 i`` degrees) and pitches 0, 15,
-15 in turn, as an agent turning its camera would. Ours caches one sampling grid
per pitch (built before timing, as an env has after its first steps) and
samples with ``cv2.remap``; py360convert (MIT, the ``bench``/``test`` extra)
rebuilds its grid on every call of a new angle. Its ``fov_deg`` is set to the
same pinhole camera (``2 atan((W - 1) / 2 f)`` with ``f = (W / 2) / tan(hfov /
2)``, its pixel-centre convention). Each figure is the lowest of 3 medians
(:func:`~urbanarena.bench.common.best_median_s`); ratio = py360convert wall /
ours wall (goal >= 5 from issue 3, >= 1 here).
"""

from __future__ import annotations

import math
from typing import Any

from urbanarena.bench.common import best_median_s, rounded

W, H, HFOV = 640, 360, 90.0
PITCHES = (0.0, 15.0, -15.0)


def py360_fov(width: int, height: int, hfov_deg: float) -> tuple[float, float]:
    """py360convert ``fov_deg`` (h, v) of the pinhole camera our views use (module docstring)."""
    f = (width / 2) / math.tan(math.radians(hfov_deg) / 2)
    return (2 * math.degrees(math.atan((width - 1) / 2 / f)), 2 * math.degrees(math.atan((height - 1) / 2 / f)))


def measure(quick: bool = False) -> dict[str, Any]:
    """``cut_ms`` (ours), ``cut_ms_py360convert``, ``cut_speedup_vs_py360convert``; ``quick`` uses a
    2048 x 1024 panorama and fewer calls. py360convert missing: its figures are ``None`` with a note."""
    from urbanarena.bench.scenes import synthetic_panorama
    from urbanarena.render.views import ViewRenderer

    pano = synthetic_panorama(2048, 1024) if quick else synthetic_panorama(5760, 2880)
    r = ViewRenderer()
    for p in PITCHES:
        r.view(pano, 0.0, p, HFOV, W, H)
    n_ours, n_ref = (10, 3) if quick else (60, 10)
    ours, ours_cpu = best_median_s(lambda i: r.view(pano, (i * 37.3) % 360, PITCHES[i % 3], HFOV, W, H), n_ours)
    out: dict[str, Any] = {"cut_panorama": f"{pano.shape[1]}x{pano.shape[0]}", "cut_view": f"{W}x{H}",
                           "cut_ms": rounded(ours * 1e3), "cut_cpu_ms": rounded(ours_cpu * 1e3)}
    try:
        import py360convert
    except ImportError:
        out.update(cut_ms_py360convert=None, cut_speedup_vs_py360convert=None,
                   _notes={"cut_speedup_vs_py360convert": "py360convert is not installed "
                           "(pip install 'urbanarena[bench]')"})
        return out
    fov = py360_fov(W, H, HFOV)
    ref, ref_cpu = best_median_s(
        lambda i: py360convert.e2p(pano, fov, ((i * 37.3) % 360) - 180, PITCHES[i % 3], (H, W)), n_ref)
    out.update(cut_ms_py360convert=rounded(ref * 1e3), cut_cpu_ms_py360convert=rounded(ref_cpu * 1e3),
               cut_speedup_vs_py360convert=rounded(ref / ours, 2))
    return out
