"""A stored arena episode as a video (``urbanarena video RUN_DIR --episode ID --out FILE.mp4|.gif``).

Frames: one per state of the episode (:class:`~urbanarena.report.replay_episode.EpisodeReplay`):
the start and one after every step, so an episode of ``steps`` steps gives
exactly ``steps + 1`` frames, each shown for ``1 / fps`` seconds (default 2
frames per second). A frame is the camera view the agent saw at that state
(re-rendered from the stored pose, run's view size, default 640 x 360) with a
map inset in its top-right corner (the city with the trajectory so far, the
start, the goal and the agent marker; ``inset_px`` square, default 1/2 of the
view height; "(c) OpenStreetMap contributors" is drawn in the inset as on
every map), above a caption band: the task id and agent, ``step k/N`` with
the action taken to reach the state, the model's thought when stored, and on
the last frame the stop reason, answer and score. Text uses the package's
sign font (Noto Sans, OFL-1.1, :func:`urbanarena.render.scene3d.fonts.sign_font`).

Encoders (decided for licences and for needing no system ffmpeg):

* ``.gif`` — Pillow (already a dependency; HPND licence), 256-colour
  palette per frame, loops forever.
* ``.mp4`` — PyAV (``pip install 'urbanarena[video]'``; BSD-3-Clause). Its
  wheels bundle their own FFmpeg libraries, so no system ffmpeg is needed.
  H.264 (``libx264``, ``yuv420p``, CRF 20) when the bundled FFmpeg has it,
  else FFmpeg's own MPEG-4 Part 2 encoder. Licences: FFmpeg is LGPL; current
  PyAV wheels also bundle libx264 (GPL-2.0-or-later). urbanarena does not
  ship either (pip installs PyAV on the user's machine, urbanarena calls it
  through PyAV's API), and an encoded video is not a work based on the
  encoder; whoever *redistributes* an environment with PyAV in it takes on
  those licences. imageio-ffmpeg was not chosen: its wheels bundle a GPL
  ffmpeg executable that it drives through a pipe.

Frame sizes are rounded up to even numbers (H.264 with 4:2:0 chroma needs them).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from urbanarena.errors import UrbanArenaError
from urbanarena.progress import Progress, counted
from urbanarena.report.replay_data import EpisodeReplay, RunReplay

#: caption band height, pixels
CAPTION_PX = 84
#: video formats by file suffix
FORMATS = {".gif": "gif", ".mp4": "mp4"}


class VideoError(UrbanArenaError):
    """A video that cannot be written: unknown suffix, bad fps, missing encoder package."""


@dataclass(frozen=True)
class VideoInfo:
    """A written video: ``path``, ``frames`` (``steps + 1``), ``fps``, ``width`` x ``height`` pixels,
    ``format`` (``gif``/``mp4``) and ``codec`` (``gif``, ``libx264`` or ``mpeg4``)."""

    path: Path
    frames: int
    fps: float
    width: int
    height: int
    format: str
    codec: str


@lru_cache(maxsize=8)
def _font(size_px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        from urbanarena.render.scene3d.fonts import sign_font

        return ImageFont.truetype(str(sign_font().path), size_px)
    except (OSError, FileNotFoundError):
        return ImageFont.load_default()


#: readable names of the arena action tokens (``env/arena_env.py``) for captions
ARENA_ACTION_NAMES = {
    "W": "walk", "S": "look back to the travel direction", "A": "look left", "D": "look right", "Q": "look up",
    "E": "look down", "LEFT": "take the left branch", "RIGHT": "take the right branch", "UP": "take the branch ahead",
    "ANSWER": "answer", "PARSE_ERROR": "unparsable reply (step consumed)",
}
#: step sizes of the sized arena actions
_SIZES = {"W": {"SMALL": "1.5 m", "MEDIUM": "4 m", "LARGE": "7 m"},
          **{k: {"SMALL": "30°", "MEDIUM": "60°", "LARGE": "90°"} for k in ("A", "D", "Q", "E")}}


def action_label(action: str) -> str:
    """A caption's name for a stored action: arena tokens read out (``"W LARGE"`` -> ``"walk 7 m (W LARGE)"``),
    graph choices as ``choice N`` / ``stop``; anything else (continuous actions' JSON ...) unchanged."""
    text = str(action).strip()
    parts = text.split(None, 1)
    if parts and parts[0].upper().rstrip(":") in ARENA_ACTION_NAMES:
        kind = parts[0].upper().rstrip(":")
        rest = parts[1] if len(parts) > 1 else ""
        size = _SIZES.get(kind, {}).get(rest.upper())
        if kind == "ANSWER":
            return f"answer {rest.lstrip(':').strip()}".strip()
        return f"{ARENA_ACTION_NAMES[kind]}{' ' + size if size else ''} ({text})"
    if text.lstrip("-").isdigit():
        return "stop" if int(text) < 0 else f"choice {int(text)}"
    return text


def _clip(text: str, width_chars: int, max_lines: int) -> list[str]:
    """``text`` wrapped to ``max_lines`` lines, the last ending in an ellipsis when text was left out."""
    lines = textwrap.wrap(" ".join(str(text).split()), width_chars)
    if len(lines) <= max_lines:
        return lines
    kept = lines[:max_lines]
    kept[-1] = (kept[-1][: width_chars - 1].rstrip() if len(kept[-1]) >= width_chars else kept[-1]) + "…"
    return kept


def _caption_lines(ep: EpisodeReplay, k: int, width_chars: int) -> list[str]:
    row = ep.row
    last = ep.n_states - 1
    head = f"{row.get('task_id')} · {row.get('agent')}"
    if k == 0:
        lines = [head, f"step 0/{last} · start"]
        if ep.task is not None and ep.task.instruction:
            lines += _clip(ep.task.instruction, width_chars, 2)
    else:
        s = ep.steps()[k - 1]
        lines = [head, f"step {k}/{last} · {action_label(s.action)}"]
        if s.thought:
            lines += _clip("thought: " + s.thought, width_chars, 2)
    if k == last:
        o = ep.outcome()
        score = o.get("score")
        tail = f"stop: {o.get('stop_reason')}"
        if o.get("answer"):
            tail += f" · answer: {o['answer']}"
        tail += f" · score: {'–' if score is None else f'{float(score):.2f}'}"
        lines = lines[:2] + _clip(tail, width_chars, 2)
    return [ln if len(ln) <= width_chars else ln[: width_chars - 1] + "…" for ln in lines[:4]]


def compose_frame(ep: EpisodeReplay, k: int, inset_px: int | None = None) -> np.ndarray:
    """Frame ``k`` of the episode's video (module docstring): RGB uint8 ``(H, W, 3)`` with ``W`` the view width and
    ``H`` the view height plus :data:`CAPTION_PX`, both rounded up to even.

    Raises:
        IndexError: ``k`` outside ``0 .. ep.n_states-1``.
    """
    view = ep.view(k)
    vh, vw = view.shape[:2]
    side = int(inset_px or max(96, vh // 2))
    side = min(side, vh - 8, vw // 2)
    w, h = vw + vw % 2, vh + CAPTION_PX + (vh + CAPTION_PX) % 2
    frame = np.full((h, w, 3), 24, np.uint8)
    frame[:vh, :vw] = view
    inset = ep.map(k, side, side)
    x0, y0 = vw - side - 6, 6
    frame[y0 - 2:y0 + side + 2, x0 - 2:x0 + side + 2] = 255
    frame[y0:y0 + side, x0:x0 + side] = inset
    img = Image.fromarray(frame)
    draw = ImageDraw.Draw(img)
    size = 15
    font = _font(size)
    chars = max(20, int(vw / (size * 0.52)))
    for i, line in enumerate(_caption_lines(ep, k, chars)):
        draw.text((8, vh + 4 + i * (size + 4)), line, fill=(235, 235, 235), font=font)
    return np.asarray(img)


def iter_frames(ep: EpisodeReplay, inset_px: int | None = None, progress: Progress | None = None,
                ) -> Iterator[np.ndarray]:
    """Every frame of the episode in order (``ep.n_states`` frames); ``progress`` hears each one written (step
    ``video frames``, :mod:`urbanarena.progress`)."""
    for k in counted(progress, "video frames", range(ep.n_states)):
        yield compose_frame(ep, k, inset_px)


def _write_gif(frames: Iterator[np.ndarray], path: Path, fps: float) -> tuple[int, int, int]:
    imgs = [Image.fromarray(f).convert("P", palette=Image.Palette.ADAPTIVE, colors=256) for f in frames]
    if not imgs:
        raise VideoError("no frame to write")
    duration = int(round(1000.0 / fps))
    imgs[0].save(path, format="GIF", save_all=True, append_images=imgs[1:], duration=duration, loop=0,
                 optimize=False, disposal=1)
    return len(imgs), imgs[0].width, imgs[0].height


def _write_mp4(frames: Iterator[np.ndarray], path: Path, fps: float) -> tuple[int, int, int, str]:
    try:
        import av
    except ImportError as e:
        raise VideoError("MP4 needs PyAV: pip install 'urbanarena[video]' (or write a .gif)") from e
    from fractions import Fraction

    codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
    rate = Fraction(fps).limit_denominator(1000)
    n = 0
    w = h = 0
    with av.open(str(path), mode="w") as container:
        stream = None
        for f in frames:
            if stream is None:
                h, w = f.shape[:2]
                stream = container.add_stream(codec, rate=rate)
                stream.width, stream.height = w, h
                stream.pix_fmt = "yuv420p"
                if codec == "libx264":
                    stream.options = {"crf": "20", "preset": "medium"}
                else:
                    stream.bit_rate = 4_000_000
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                container.mux(packet)
            n += 1
        if stream is None:
            raise VideoError("no frame to write")
        for packet in stream.encode():
            container.mux(packet)
    return n, w, h, codec


def write_episode_video(ep: EpisodeReplay, out: str | Path, *, fps: float = 2.0, inset_px: int | None = None,
                        progress: Progress | None = None) -> VideoInfo:
    """Write the episode as ``out`` (``.gif`` or ``.mp4``; module docstring); ``progress`` hears each frame.

    Raises:
        VideoError: an unknown suffix, ``fps`` not in (0, 60], or PyAV missing for MP4.
        RendererUnavailableError: a rendered city and no OpenGL context here.
        OSError: ``out`` not writable.
    """
    p = Path(out)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise VideoError(f"--out {p}: the video format follows the suffix: .mp4 or .gif")
    if not 0 < float(fps) <= 60:
        raise VideoError(f"--fps must be in (0, 60] (got {fps})")
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.stem}.tmp{p.suffix}")
    try:
        if fmt == "gif":
            n, w, h = _write_gif(iter_frames(ep, inset_px, progress), tmp, float(fps))
            codec = "gif"
        else:
            n, w, h, codec = _write_mp4(iter_frames(ep, inset_px, progress), tmp, float(fps))
        tmp.replace(p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return VideoInfo(p, n, float(fps), w, h, fmt, codec)


def video_of_run(run_dir: str | Path, episode: str | int, out: str | Path, *, fps: float = 2.0,
                 city: str | None = None, inset_px: int | None = None, render_style: str | None = None,
                 progress: Progress | None = None) -> VideoInfo:
    """:func:`write_episode_video` of episode ``episode`` (row id or unique task id) of ``run_dir``.

    Raises:
        StoreError: no store, no such episode, a graph episode, the run's city not loadable.
        VideoError, RendererUnavailableError, OSError: see :func:`write_episode_video`.
    """
    return write_episode_video(RunReplay(run_dir, city, render_style).episode(episode), out, fps=fps,
                               inset_px=inset_px, progress=progress)


__all__ = ["CAPTION_PX", "VideoError", "VideoInfo", "compose_frame", "iter_frames", "video_of_run",
           "write_episode_video"]
