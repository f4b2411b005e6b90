"""A renderer's framebuffers and GL objects: the per-size draw targets it keeps, and their release.

Moved out of :mod:`.renderer` (same behaviour): :func:`view_framebuffers` keeps at most :data:`MAX_SIZES` sizes
per renderer (least recently used released first), :func:`free_gl` releases everything a renderer holds.
"""

from __future__ import annotations

from collections import OrderedDict

#: a renderer keeps the framebuffers of this many view sizes
MAX_SIZES = 4


def release_framebuffers(fbs) -> None:
    """Release each framebuffer of ``fbs`` (``None`` skipped) with its attachments (the context current)."""
    for fb in fbs:
        if fb is not None:
            for a in fb.color_attachments:
                a.release()
            if fb.depth_attachment is not None:
                fb.depth_attachment.release()
            fb.release()


def view_framebuffers(ctx, cache: OrderedDict, width: int, height: int, samples: int) -> tuple:
    """``(draw, resolve)`` framebuffers of ``width`` x ``height`` from ``cache`` (made when missing): ``draw``
    RGBA with a depth buffer and ``samples`` MSAA samples (0 or 1: none; capped at the context's maximum),
    ``resolve`` a single-sampled RGBA target when multisampled, else ``None``."""
    key = (width, height)
    f = cache.get(key)
    if f is not None:
        cache.move_to_end(key)
        return f
    samples = min(samples if samples > 1 else 0, ctx.max_samples)
    ms = ctx.framebuffer([ctx.renderbuffer((width, height), 4, samples=samples)],
                         ctx.depth_renderbuffer((width, height), samples=samples))
    resolve = ctx.framebuffer([ctx.renderbuffer((width, height), 4)]) if samples else None
    f = (ms, resolve)
    cache[key] = f
    while len(cache) > MAX_SIZES:
        _, old = cache.popitem(last=False)
        release_framebuffers(old)
    return f


def free_gl(fbos: OrderedDict, resources: list) -> None:
    """Release a renderer's framebuffers and kept GL objects and empty both (the context current)."""
    for pair in fbos.values():
        release_framebuffers(pair)
    fbos.clear()
    for r in reversed(resources):
        r.release()
    resources.clear()
