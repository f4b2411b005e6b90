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
import weakref

from urbanarena.errors import UrbanArenaError


class RendererUnavailableError(UrbanArenaError, RuntimeError):
    """No OpenGL context can be created here (missing moderngl or EGL libraries); the message says why."""


_lock = threading.Lock()
_ctx: dict[int, object] = {}
_fail: dict[int, str] = {}
#: Serialises all GL work of the process (one context, current in one thread at a time).
GL_LOCK = threading.RLock()
_depth = threading.local()
#: ``(pid, free, args)`` of GL owners (renderers, population arrays) collected without their ``release()``:
#: freed by the next :func:`current` of this process (a weakref finalizer may run in any thread, during any
#: allocation, so it only appends here; ``list.append`` / ``list.pop`` are atomic, no lock is taken)
_collected: list = []


@contextlib.contextmanager
def current(ctx):
    """Hold :data:`GL_LOCK` and make ``ctx`` current in this thread for the block (re-entrant)."""
    with GL_LOCK:
        d = getattr(_depth, "n", 0)
        if d == 0:
            ctx.__enter__()
            if _collected:
                _free_collected()
        _depth.n = d + 1
        try:
            yield ctx
        finally:
            _depth.n = d
            if d == 0:
                ctx.__exit__(None, None, None)


def free_when_collected(owner, free, *args) -> weakref.finalize:
    """When ``owner`` is garbage-collected, call ``free(*args)`` with this process's context current (at the next
    :func:`current`, or :func:`release_collected`). ``free`` and ``args`` must not refer to ``owner``; ``free``
    must be safe after an explicit release (it then finds nothing left to free).

    moderngl frees a GL object only on its ``release()``: a renderer dropped without :meth:`release` otherwise
    keeps its buffers and textures in the process's one context for good (about 265 MB per realistic renderer
    of the core city, measured by building and dropping five; issue 27 item 4)."""
    pid = os.getpid()

    def bury() -> None:
        if os.getpid() == pid:  # not a copy of the owner in a forked child: its GL names belong to the parent
            _collected.append((pid, free, args))

    f = weakref.finalize(owner, bury)
    f.atexit = False  # at exit the context goes with the process
    return f


def _free_collected() -> None:
    pid = os.getpid()
    while _collected:
        try:
            owner_pid, free, args = _collected.pop()
        except IndexError:  # emptied by another thread between the test and the pop
            return
        if owner_pid != pid:
            continue
        try:
            free(*args)
        except Exception:  # noqa: BLE001 -- an object freed twice or a context lost: nothing left to free
            pass


def release_collected() -> None:
    """Free now the GL objects of owners collected without ``release()`` (:func:`free_when_collected`), when this
    process has a context; a no-op otherwise."""
    ctx = _ctx.get(os.getpid())
    if ctx is not None and _collected:
        with current(ctx):
            pass  # current() frees them on entry


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
