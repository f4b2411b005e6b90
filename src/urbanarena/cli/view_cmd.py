"""``urbanarena view PANORAMA --yaw DEG --pitch DEG --hfov DEG --size WxH --out FILE``.

Cuts a perspective view from an equirectangular panorama file. Here ``--yaw``
is degrees clockwise from the image's centre column (not a compass bearing)
and ``--pitch`` is degrees up from the horizon; see
:mod:`urbanarena.render.views` for the pixel conventions. The output format
follows the ``--out`` suffix (``.png``, ``.jpg``/``.jpeg``).

Register in ``cli/main.py`` with ``app.command("view")(view)``.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer

from urbanarena.cli.common import checked_camera, fail

from urbanarena.errors import UrbanArenaError


def view(
    panorama: Path = typer.Argument(..., help="Equirectangular panorama (JPEG/PNG/WebP, 2:1)."),
    yaw: float = typer.Option(0.0, "--yaw", help="Degrees clockwise from the image's centre column."),
    pitch: float = typer.Option(0.0, "--pitch", help="Degrees up from the horizon, in [-90, 90]."),
    hfov: float = typer.Option(90.0, "--hfov", help="Horizontal field of view, degrees, in (0, 180)."),
    size: str = typer.Option("640x360", "--size", help="Output size WIDTHxHEIGHT in pixels."),
    out: Path = typer.Option(..., "--out", help="Output image file (.png, .jpg or .jpeg)."),
    quality: int = typer.Option(92, "--quality", help="JPEG quality 1..100 (JPEG output only)."),
    camera: str = typer.Option("clean", "--camera", help="Camera model the view goes through (clean, consumer360, "
                                                         "phone; docs/renderer.md); default clean."),
) -> None:
    """Cut a perspective view from a 360-degree panorama and write it to FILE."""
    from urbanarena.render.encode import encode_image
    from urbanarena.render.panorama_store import load_equirect
    from urbanarena.render.views import parse_size, perspective_view

    try:
        suffix = out.suffix.lower()
        fmt = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg"}.get(suffix)
        if fmt is None:
            raise ValueError(f"--out {out}: unsupported image type {suffix or '(none)'}; use .png, .jpg or .jpeg")
        width, height = parse_size(size)
        for name, value in (("--yaw", yaw), ("--pitch", pitch), ("--hfov", hfov)):
            if not math.isfinite(value):
                raise ValueError(f"{name} {value}: not a finite number of degrees")
        pano = load_equirect(panorama)
        img = perspective_view(pano, yaw, pitch, hfov, width, height)
        from urbanarena.render.camera_model import get_camera

        img = get_camera(checked_camera(camera)).apply(img, f"{panorama.name}|{yaw:.4f}|{pitch:.4f}|{hfov:g}|{size}", hfov_deg=hfov)
        enc = encode_image(img, fmt, jpeg_quality=quality)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(enc.data)
    except (UrbanArenaError, ValueError, OSError) as e:
        raise fail(e) from None
    typer.echo(f"{out} ({width}x{height}, yaw {yaw:g} deg, pitch {pitch:g} deg, hfov {hfov:g} deg)")
