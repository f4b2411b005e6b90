"""Blind sorting of rendered views against real photos (issue 24's measure of realism).

``build``: writes ``--n`` rendered views an agent receives (640x360, 90 degrees, the default city in the
``--style`` (realistic by default; photo) with its people and vehicles, through ``--camera``; pose nodes sampled by hash, yaws and
conditions drawn from a seeded stream: clear day, cloudy, dusk, rain, night) and ``--n`` views cut from the
real equirectangular photos in ``../shared/data/panoramas`` (random yaw, pitch -5..5 degrees), every image
passed through one JPEG of quality 90 at the same size and stored as the PNG of the decoded pixels, named by a
random id and shuffled, into ``OUT/images``; the key
(which is which, and how it was made) goes to ``OUT/key.json``, kept apart from the images.

``score``: reads a verdict file (JSON ``{"image name": {"label": "photo"|"rendered", "confidence": 0..100}}``)
and the key, and prints the share sorted correctly and the rendered views called rendered at >= 90 %
confidence (issue 24's target: at most 60 % correct, and none of those).

    LP_NUM_THREADS=2 python3 benchmarks/bench_blind_realism.py build --out /tmp/blind [--n 16] [--camera consumer360] [--style photo]
    python3 benchmarks/bench_blind_realism.py score --out /tmp/blind --verdicts verdicts.json
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED, need  # noqa: E402

CONDITIONS = ("clear", "clear", "cloudy", "dusk", "rain", "night")


def build(out: Path, n: int, camera: str, seed: int, city_name: str, style: str = "realistic") -> None:
    from urbanarena.bench.realism import _city
    from urbanarena.env.arena_env import ArenaEnv
    from urbanarena.env.observers import panorama_observer_for
    from urbanarena.render import realism as R
    from urbanarena.render.scene3d.renderer import RenderSettings
    from urbanarena.render.scene3d.styles import settings_for_style
    from urbanarena.render.views import perspective_view

    rng = np.random.default_rng(seed)
    photos = R.default_photos(need(SHARED / "panoramas").parent)
    (out / "images").mkdir(parents=True, exist_ok=True)
    city = _city(city_name)
    nodes = R.sample_nodes(map(str, city.graph.nodes), 4 * n)
    items = []
    base = settings_for_style(style)
    by_cond: dict[str, list[int]] = {}
    for i in range(n):
        by_cond.setdefault(CONDITIONS[int(rng.integers(len(CONDITIONS)))], []).append(i)
    for cond, idx in sorted(by_cond.items()):
        from dataclasses import replace

        from urbanarena.render.scene3d.conditions import parse_condition

        settings = base
        if cond != "clear":
            w, t = parse_condition(cond)
            settings = replace(base, weather=w, time_of_day=t)
        obs = panorama_observer_for(city, render_settings=settings, camera=camera, width=640, height=360,
                                    render_root=out / "panoramas")
        env = ArenaEnv(city, observer=obs)
        for i in idx:
            node = nodes[int(rng.integers(len(nodes)))]
            heading = float(rng.uniform(0, 360))
            o, _ = env.reset(options={"start_node": node, "start_heading_deg": heading})
            items.append({"source": "rendered", "node": node, "heading_deg": round(heading, 1), "condition": cond,
                          "camera": camera, "style": base.style, "img": o["view"]})
        print(f"rendered {len(idx)} views in {cond}", flush=True)
    for i in range(n):
        p = photos[int(rng.integers(len(photos)))]
        from urbanarena.render.panorama_store import load_equirect

        yaw, pitch = float(rng.uniform(-180, 180)), float(rng.uniform(-5, 5))
        img = perspective_view(load_equirect(p), yaw, pitch, 90.0, 640, 360)
        items.append({"source": "photo", "file": p.name, "yaw_deg": round(yaw, 1), "pitch_deg": round(pitch, 1),
                      "img": img})
    order = rng.permutation(len(items))
    key = {}
    for rank, k in enumerate(order):
        it = items[int(k)]
        name = f"{rng.integers(16 ** 8):08x}.png"
        # every image through the same JPEG (quality 90), stored as the PNG of the decoded pixels (lossless:
        # the sorter sees exactly the JPEG's pixels, in a format every viewer opens)
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(it.pop("img"))).save(buf, format="JPEG", quality=90)
        Image.open(io.BytesIO(buf.getvalue())).convert("RGB").save(out / "images" / name)
        key[name] = it
    (out / "key.json").write_text(json.dumps(key, indent=1, sort_keys=True))
    print(f"{len(key)} images -> {out / 'images'}; key -> {out / 'key.json'} (keep it from the sorter)")


def score(out: Path, verdicts_path: Path) -> None:
    key = json.loads((out / "key.json").read_text())
    verdicts = json.loads(Path(verdicts_path).read_text())
    missing = sorted(set(key) - set(verdicts))
    if missing:
        print(f"warning: {len(missing)} images without a verdict (counted wrong): {', '.join(missing[:5])}")
    right = sum(1 for k, v in key.items() if (verdicts.get(k) or {}).get("label") == v["source"])
    confident = [k for k, v in key.items() if v["source"] == "rendered"
                 and (verdicts.get(k) or {}).get("label") == "rendered"
                 and float((verdicts.get(k) or {}).get("confidence", 0)) >= 90]
    rendered = sum(1 for v in key.values() if v["source"] == "rendered")
    print(f"sorted correctly: {right} of {len(key)} ({100 * right / len(key):.0f} %; target <= 60 %)")
    print(f"rendered views called rendered at >= 90 % confidence: {len(confident)} of {rendered} (target 0)")
    conf = [float(v.get("confidence", 0)) for k, v in verdicts.items() if key.get(k, {}).get("source") == "rendered"
            and v.get("label") == "rendered"]
    if conf:
        print(f"median confidence on rendered views called rendered: {float(np.median(conf)):.0f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("build", "score"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--camera", default="consumer360")
    ap.add_argument("--style", default="realistic", help="render style of the rendered views (realistic, photo)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--city", default="helsinki")
    ap.add_argument("--verdicts", type=Path)
    a = ap.parse_args()
    if a.mode == "build":
        build(a.out, a.n, a.camera, a.seed, a.city, a.style)
    else:
        if a.verdicts is None:
            ap.error("score needs --verdicts")
        score(a.out, a.verdicts)


if __name__ == "__main__":
    main()
