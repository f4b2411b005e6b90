"""What a tiny change (another CPU's code generation, a sub-pixel turn) and a real change (people moved, a camera
turned by a pixel or more) move in the coarse fingerprint of frozen images (``tasks/frozen_tolerance.py``).

Draws a few ``helsinki-arena7-v5`` mini landmark references (the ones this machine draws differently from the
manifest first) and fingerprint panoramas, once per variant, each variant in its own process (llvmpipe reads
``GALLIUM_OVERRIDE_CPU_CAPS`` once), and prints per image: pixels that differ from the baseline drawing, the
largest block-mean difference (grey levels) and whether the drawing's sha256 equals the frozen manifest's.
(``LP_NATIVE_VECTOR_WIDTH=128`` is not a variant: on the AVX-512 machine of 2026-12-08 llvmpipe aborted with it,
``malloc(): invalid size``.)

    URBANARENA_HOME=... LP_NUM_THREADS=2 PYTHONPATH=src python benchmarks/bench_frozen_tolerance.py --out /tmp/ft
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SUITE = Path(__file__).resolve().parents[1] / "src/urbanarena/tasks/frozen/helsinki-arena7-v5/manifest.json"
#: variant -> (environment, yaw offset deg, population key suffix)
VARIANTS = {
    "base": ({}, 0.0, ""),
    "cpu-avx": ({"GALLIUM_OVERRIDE_CPU_CAPS": "avx"}, 0.0, ""),
    "cpu-sse4.1": ({"GALLIUM_OVERRIDE_CPU_CAPS": "sse4.1"}, 0.0, ""),
    "yaw+0.01": ({}, 0.01, ""),
    "yaw+0.2": ({}, 0.2, ""),
    "yaw+1": ({}, 1.0, ""),
    "people": ({}, 0.0, "/moved"),
    "person+0.3m": ({}, 0.0, ""),
}
#: variant -> metres the person nearest the camera steps sideways (east)
MOVE_M = {"person+0.3m": 0.3}


def _moved(people, x_m: float, y_m: float, move_m: float, yaw_deg: float | None = None, hfov_deg: float = 360.0):
    """``people`` with the person nearest ``(x_m, y_m)`` (at least 3 m away, inside the view's field when ``yaw_deg``,
    a compass bearing, is given) moved ``move_m`` east (``people`` when none)."""
    import math
    from dataclasses import replace

    from urbanarena.render.scene3d.population import PEOPLE_KINDS
    from urbanarena.render.scene3d.population_draw import PopulationObjects

    if people is None or not move_m:
        return people
    snap = people.snapshot

    def seen(p) -> bool:
        if math.hypot(p.x_m - x_m, p.y_m - y_m) < 3.0:
            return False
        if yaw_deg is None:
            return True
        bearing = math.degrees(math.atan2(p.x_m - x_m, p.y_m - y_m))
        return abs((bearing - yaw_deg + 180.0) % 360.0 - 180.0) < hfov_deg / 2 - 5.0
    persons = [i for i, p in enumerate(snap.placements) if p.kind in PEOPLE_KINDS and seen(p)]
    if not persons:
        return people
    i = min(persons, key=lambda i: (snap.placements[i].x_m - x_m) ** 2 + (snap.placements[i].y_m - y_m) ** 2)
    pl = list(snap.placements)
    pl[i] = replace(pl[i], x_m=pl[i].x_m + move_m)
    return PopulationObjects(replace(snap, placements=tuple(pl)), people.models)


def _pick(manifest, n_refs: int, n_panos: int, first: list[str]):
    assets = manifest["sizes"]["mini"]["assets"]
    refs = sorted(r for r, a in assets.items() if a["kind"] == "reference_view")
    refs = [r for r in first if r in refs] + [r for r in refs if r not in first]
    panos = sorted(manifest["panorama_fingerprint"])
    panos = [p for p in first if p in panos] + [p for p in panos if p not in first]
    return refs[:n_refs], panos[:n_panos]


def draw(out: Path, variant: str, refs: list[str], panos: list[str]) -> None:
    """Draw ``refs`` and ``panos`` under ``variant`` into ``out/variant/`` (PNG) with their sha256 in hashes.json."""
    import cv2

    from urbanarena.bench.realism import _city
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, pixel_hash, render_with_population
    from urbanarena.render.scene3d.population_draw import node_population, release_population
    from urbanarena.render.scene3d.reference import _view_camera, reference_renderer_of, reference_settings
    from urbanarena.render.scene3d.styles import settings_for_style

    _, dyaw, suffix = VARIANTS[variant]
    manifest = json.loads(SUITE.read_text())
    assets = manifest["sizes"]["mini"]["assets"]
    city = _city("helsinki")
    d = out / variant
    d.mkdir(parents=True, exist_ok=True)
    hashes = {}
    ref = reference_renderer_of(city, "photo")
    for rel in refs:
        view = dict(assets[rel]["params"])
        key = json.dumps(view, sort_keys=True, default=str)  # the camera's noise stays the original's
        settings = reference_settings(view, ref.base_settings)
        r = ref.renderer(settings)
        people = node_population(ref.scene, settings, view["population_key"] + suffix, view["x_m"], view["y_m"])
        people = _moved(people, view["x_m"], view["y_m"], MOVE_M.get(variant, 0.0), view["yaw_deg"], view["hfov_deg"])
        try:
            img = r.render_view(view["x_m"], view["y_m"], (view["yaw_deg"] + dyaw) % 360.0, view["pitch_deg"],
                                view["hfov_deg"], int(view["width"]), int(view["height"]),
                                eye_height_m=view["eye_height_m"], dynamic=people, attribution=True)
        finally:
            release_population(r, people)
        cam = _view_camera(view)
        if not cam.is_identity:
            img = cam.apply(img, key, hfov_deg=float(view["hfov_deg"]))
        name = Path(rel).name
        cv2.imwrite(str(d / name), img[..., ::-1])
        hashes[name] = pixel_hash(img)
    ref.release()
    store = RenderedPanoramaStore(city, settings=settings_for_style("photo"), root=out / "_store")
    for n in panos:
        x, y, bearing = store.poses[n]
        people = _moved(node_population(store.scene, store.settings, n + suffix, x, y), x, y, MOVE_M.get(variant, 0.0))
        img = render_with_population(store.renderer, x, y, store.eye_height_m, store.width, bearing + dyaw, people)
        cv2.imwrite(str(d / f"{n}.png"), img[..., ::-1])
        hashes[f"{n}.png"] = pixel_hash(img)
    (d / "hashes.json").write_text(json.dumps(hashes, indent=1))


def compare(out: Path, manifest, refs, panos) -> None:
    import cv2

    from urbanarena.tasks.frozen_tolerance import coarse_fingerprint, max_block_diff

    assets = manifest["sizes"]["mini"]["assets"]
    frozen = {Path(r).name: a["pixel_sha256"] for r, a in assets.items()}
    frozen.update({f"{n}.png": h for n, h in manifest["panorama_fingerprint"].items()})
    base = out / "base"
    print(f"{'variant':12} {'image':36} {'px differ':>10} {'max |block d|':>13} frozen sha256")
    summary = {}
    for v in VARIANTS:
        hv = json.loads((out / v / "hashes.json").read_text()) if (out / v / "hashes.json").is_file() else None
        if hv is None:
            continue
        for name in sorted(hv):
            a = cv2.imread(str(base / name))
            b = cv2.imread(str(out / v / name))
            px = int((np.abs(a.astype(int) - b.astype(int)).max(axis=2) > 0).sum())
            dmax = max_block_diff(coarse_fingerprint(a[..., ::-1]), coarse_fingerprint(b[..., ::-1]))
            same = "match" if hv[name] == frozen[name] else "differ"
            summary.setdefault(v, []).append(dmax)
            print(f"{v:12} {name:36} {px:10d} {dmax:13.3f} {same}")
    print("\nper variant: max |block diff| over its images (grey levels): min / median / max")
    for v, xs in summary.items():
        print(f"{v:12} {min(xs):7.3f} {float(np.median(xs)):7.3f} {max(xs):7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--refs", type=int, default=8)
    ap.add_argument("--panos", type=int, default=3)
    ap.add_argument("--first", default="", help="comma-separated asset paths / nodes to draw first (e.g. the ones "
                                                "that differ here: a check.json's assets_differ)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--draw", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    manifest = json.loads(SUITE.read_text())
    first = [s for s in a.first.split(",") if s]
    refs, panos = _pick(manifest, a.refs, a.panos, first)
    if a.draw:
        draw(a.out, a.draw, refs, panos)
        return
    for v in a.variants.split(","):
        if (a.out / v / "hashes.json").is_file():
            continue
        env = {**os.environ, **VARIANTS[v][0]}
        subprocess.run([sys.executable, __file__, "--out", str(a.out), "--refs", str(a.refs), "--panos",
                        str(a.panos), "--first", a.first, "--draw", v], env=env, check=True)
        print(f"drew {v}", file=sys.stderr, flush=True)
    compare(a.out, manifest, refs, panos)


if __name__ == "__main__":
    main()
