"""Side-by-side pictures of issue 24: the same view an agent receives in the ``realistic`` and ``photo`` styles
(the default city, its people and vehicles, the ``consumer360`` camera, 640x360, 90 degrees), and, with
``--photo-out``, beside them a view cut from a real 360-degree photo of ``../shared`` (written only there: the
shared photos never go into the repository).

    LP_NUM_THREADS=2 python3 benchmarks/render_side_by_side.py [--out docs/screenshots] [--photo-out /tmp/sbs]

Views (ours): three pose nodes of the Helsinki core at a clear midday, dusk and rain, headings chosen to look
along a street. Writes ``side-by-side-<condition>.jpg`` (realistic left, photo right; JPEG quality 85).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED  # noqa: E402

#: (condition, node, heading_deg): a shopping street, a square with a tram stop, a residential street
VIEWS = (("clear", "n00701", 344.0), ("dusk", "n00264", 341.0), ("rain", "n00744", 200.0))


def _views(city, style: str, work: Path) -> dict[str, np.ndarray]:
    from urbanarena.env.arena_env import ArenaEnv
    from urbanarena.env.observers import panorama_observer_for
    from urbanarena.render.scene3d.conditions import parse_condition
    from urbanarena.render.scene3d.styles import settings_for_style

    base = settings_for_style(style)
    if base.style != style:
        raise SystemExit(f"the {style} style is not available here (fetch its assets: urbanarena assets fetch)")
    out = {}
    for cond, node, heading in VIEWS:
        settings = base
        if cond != "clear":
            w, t = parse_condition(cond)
            settings = replace(base, weather=w, time_of_day=t)
        obs = panorama_observer_for(city, render_settings=settings, camera="consumer360", width=640, height=360,
                                    render_root=work / style)
        o, _ = ArenaEnv(city, observer=obs).reset(options={"start_node": node, "start_heading_deg": heading})
        out[cond] = np.ascontiguousarray(o["view"])
        print(f"{style} {cond} at {node}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    ap.add_argument("--photo-out", type=Path, default=None,
                    help="also write realistic | photo | real photo triples here (never into the repository)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/urbanarena-side-by-side"))
    a = ap.parse_args()
    from PIL import Image

    from urbanarena.bench.realism import _city

    city = _city("helsinki")
    real, photo = _views(city, "realistic", a.work), _views(city, "photo", a.work)
    a.out.mkdir(parents=True, exist_ok=True)
    cuts = []
    if a.photo_out is not None:
        from urbanarena.render import realism as R
        from urbanarena.render.panorama_store import load_equirect
        from urbanarena.render.views import perspective_view

        photos = R.default_photos(SHARED)
        cuts = [perspective_view(load_equirect(p), 0.0, 0.0, 90.0, 640, 360) for p in photos[:len(VIEWS)]]
        a.photo_out.mkdir(parents=True, exist_ok=True)
    for i, (cond, _, _) in enumerate(VIEWS):
        pair = np.concatenate([real[cond], photo[cond]], axis=1)
        Image.fromarray(pair).save(a.out / f"side-by-side-{cond}.jpg", quality=85)
        if i < len(cuts):
            Image.fromarray(np.concatenate([pair, cuts[i]], axis=1)).save(a.photo_out / f"triple-{cond}.jpg",
                                                                          quality=85)
    print(f"wrote {a.out}/side-by-side-*.jpg" + (f" and {a.photo_out}/triple-*.jpg" if cuts else ""))


if __name__ == "__main__":
    main()
