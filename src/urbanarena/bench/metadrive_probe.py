"""MetaDrive first-person render rate, measured in a separate interpreter.

This file imports nothing from urbanarena: it runs as a plain script
(``python metadrive_probe.py --width 640 --height 360 --frames 60``) under
any Python that has ``metadrive-simulator`` (Apache-2.0; Panda3D) installed —
the current one with the ``bench`` extra, or a separate environment given
as ``--metadrive-python`` / ``$URBANARENA_METADRIVE_PYTHON`` (MetaDrive pins
``opencv-python`` and ``panda3d``, which some users keep apart from their
main environment).

Scene: MetaDrive's default procedural map (``MetaDriveEnv``, 3 blocks, default
traffic density), headless (``use_render=False``) with one RGB camera of the
given size as the image observation (``image_observation=True``, offscreen
Panda3D buffer). Each timed frame is one ``env.step`` with a constant
throttle, which renders the camera into the observation (physics and traffic
included: MetaDrive has no public render-only call, so its rate is an upper
bound of what rendering alone costs, stated beside the figure). Figure:
``frames / wall seconds`` after 5 warm-up steps.

Prints one JSON line: ``{"ok": true, "fps": ..., "frames": ..., "width": ..., "height": ...,
"metadrive": VERSION}`` or ``{"ok": false, "stage": ..., "error": ...}``
naming the stage that failed (``import``, ``reset``: engine start and asset
loading, ``step``) and why. MetaDrive downloads its asset pack
(``assets.zip`` from the project's GitHub releases) on the first engine start
(``metadrive/pull_asset.py``); where only a package index is reachable that
download fails, and ``reason`` says so.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback


def _fail(stage: str, exc: BaseException) -> dict:
    tb = traceback.format_exc()
    reason = f"{type(exc).__name__}: {exc}"
    if "pull_asset" in tb:
        reason = ("MetaDrive could not fetch its asset pack (metadrive/pull_asset.py downloads assets.zip from "
                  f"GitHub releases on the first engine start; no network route here): {reason}")
    return {"ok": False, "stage": stage, "error": reason[:600]}


def probe(width: int, height: int, frames: int) -> dict:
    """Run the measurement (module docstring); never raises."""
    try:
        import metadrive
        from metadrive.component.sensors.rgb_camera import RGBCamera
        from metadrive.envs.metadrive_env import MetaDriveEnv
    except BaseException as e:  # noqa: BLE001 - reported, not raised
        return _fail("import", e)
    try:
        from importlib.metadata import version as _dist_version

        version = _dist_version("metadrive-simulator")
    except Exception:  # noqa: BLE001 - the version is informative only
        version = getattr(metadrive, "__version__", None)
    try:
        env = MetaDriveEnv(dict(use_render=False, image_observation=True, norm_pixel=False,
                                sensors={"rgb_camera": (RGBCamera, width, height)},
                                vehicle_config=dict(image_source="rgb_camera"), log_level=50))
        obs, _ = env.reset(seed=0)
    except BaseException as e:  # noqa: BLE001
        return _fail("reset", e) | {"metadrive": version}
    try:
        img = obs["image"] if isinstance(obs, dict) else obs
        shape = list(getattr(img, "shape", []))
        for _ in range(5):
            env.step([0.0, 0.5])
        t = time.perf_counter()
        for _ in range(frames):
            obs, _, term, trunc, _ = env.step([0.0, 0.5])
            if term or trunc:
                env.reset(seed=0)
        wall = time.perf_counter() - t
        env.close()
    except BaseException as e:  # noqa: BLE001
        return _fail("step", e) | {"metadrive": version}
    return {"ok": True, "fps": frames / wall, "frames": frames, "width": width, "height": height,
            "image_shape": shape, "metadrive": version,
            "note": "one env.step per frame (camera render + physics + traffic)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--height", type=int, default=360)
    ap.add_argument("--frames", type=int, default=60)
    a = ap.parse_args()
    sys.stdout.write(json.dumps(probe(a.width, a.height, a.frames)) + "\n")


if __name__ == "__main__":
    main()
