"""The headless OpenGL context (moderngl on EGL; Mesa's llvmpipe on a machine without a GPU).

One context per process, created on first use and reused (``gl_context``). A
context must not cross ``fork()``: worker processes create their own (the
cache is keyed by process id). An EGL context is current in one thread at a
time: every use goes through :func:`current`, which holds a process-wide lock
and makes the context current in the calling thread, so renderers can be used
from any thread (one at a time); :func:`gl_context` releases a new context from
the thread that created it, or no other thread could bind it.

Requirements: the ``moderngl`` package (MIT) and the EGL/Mesa libraries —
on Debian ``libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri`` (``libEGL.so.1``,
``libGL.so.1``, the Mesa EGL vendor and the llvmpipe driver). No GPU needed.
``URBANARENA_GL_BACKEND`` overrides the glcontext backend (default ``egl``;
``""`` = moderngl's platform default, e.g. GLX with a display).
"""

from __future__ import annotations

import contextlib
import os
import threading

from urbanarena.errors import UrbanArenaError


class RendererUnavailableError(UrbanArenaError, RuntimeError):
    """No OpenGL context can be created here (missing moderngl or EGL libraries); the message says why."""


_lock = threading.Lock()
_ctx: dict[int, object] = {}
_fail: dict[int, str] = {}
#: Serialises all GL work of the process (one context, current in one thread at a time).
GL_LOCK = threading.RLock()
_depth = threading.local()


@contextlib.contextmanager
def current(ctx):
    """Hold :data:`GL_LOCK` and make ``ctx`` current in this thread for the block (re-entrant)."""
    with GL_LOCK:
        d = getattr(_depth, "n", 0)
        if d == 0:
            ctx.__enter__()
        _depth.n = d + 1
        try:
            yield ctx
        finally:
            _depth.n = d
            if d == 0:
                ctx.__exit__(None, None, None)


def _backend() -> str | None:
    b = os.environ.get("URBANARENA_GL_BACKEND", "egl")
    return b or None


def gl_context():
    """This process's shared ``moderngl.Context`` (created on first call).

    Raises:
        RendererUnavailableError: moderngl is not installed or no context can be
            created (the message carries the underlying error and the install hint).
    """
    pid = os.getpid()
    with _lock:
        if pid in _ctx:
            return _ctx[pid]
        if pid in _fail:
            raise RendererUnavailableError(_fail[pid])
        try:
            import moderngl
        except ImportError as e:
            _fail[pid] = f"moderngl is not installed ({e}); pip install moderngl"
            raise RendererUnavailableError(_fail[pid]) from e
        backend = _backend()
        try:
            ctx = (moderngl.create_standalone_context(backend=backend) if backend
                   else moderngl.create_standalone_context())
        except Exception as e:  # glcontext raises plain Exception subclasses
            _fail[pid] = (f"cannot create a headless OpenGL context (backend {backend or 'default'!r}): {e}. "
                          "Install the EGL/Mesa libraries: apt-get install -y libegl1 libegl-mesa0 libgl1 "
                          "libgl1-mesa-dri")
            raise RendererUnavailableError(_fail[pid]) from e
        if ctx.version_code < 330:
            _fail[pid] = f"OpenGL 3.3 needed, context offers {ctx.version_code}"
            raise RendererUnavailableError(_fail[pid])
        # A new EGL context is current in the creating thread, and EGL lets a context be current in one
        # thread only: another thread's make-current then fails silently and its first GL call ("cannot
        # create program") fails. Release it here so :func:`current` can bind it in any thread (issue 15:
        # ``urbanarena play`` created it in the main thread and built the renderer in an episode thread).
        ctx.__enter__()
        ctx.__exit__(None, None, None)
        _ctx[pid] = ctx
        return ctx


def gl_unavailable_reason() -> str | None:
    """``None`` when :func:`gl_context` works here, else the reason (for ``pytest.skip``)."""
    try:
        gl_context()
        return None
    except RendererUnavailableError as e:
        return str(e)


def gl_info() -> dict[str, str]:
    """``GL_RENDERER``, ``GL_VERSION`` and ``GL_VENDOR`` of the context (part of a render's identity)."""
    ctx = gl_context()
    with current(ctx):
        info = ctx.info
    return {k: str(info.get(k, "")) for k in ("GL_VENDOR", "GL_RENDERER", "GL_VERSION")}
