"""Issue 15, defect 3 at its root: the process's GL context works from a thread other than the one that
created it (``urbanarena play`` creates it in the main thread and builds the renderer in an episode thread).

Runs in a fresh interpreter: the test process may already hold a context that other tests used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from urbanarena.render.scene3d.context import gl_unavailable_reason

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None,
                                reason=f"3D renderer unavailable: {gl_unavailable_reason()}")

SCRIPT = r'''
import threading
import numpy as np
from urbanarena.render.scene3d.context import current, gl_context

VS = "#version 330\nin vec2 p; void main() { gl_Position = vec4(p, 0.0, 1.0); }"
FS = "#version 330\nout vec4 c; void main() { c = vec4(1.0, 0.5, 0.25, 1.0); }"
ctx = gl_context()  # created in the main thread, never used there
out = {}

def draw():
    try:
        with current(ctx):
            prog = ctx.program(vertex_shader=VS, fragment_shader=FS)
            vbo = ctx.buffer(np.array([-1, -1, 3, -1, -1, 3], dtype="f4").tobytes())
            vao = ctx.vertex_array(prog, [(vbo, "2f", "p")])
            fbo = ctx.simple_framebuffer((4, 4))
            fbo.use()
            vao.render()
            out["pixel"] = np.frombuffer(fbo.read(components=4), dtype=np.uint8)[:4].tolist()
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"

t = threading.Thread(target=draw)
t.start()
t.join()
print(out)
'''


def test_context_created_in_main_thread_draws_in_another():
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1] / "src"))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "error" not in r.stdout, r.stdout
    assert r.stdout.strip() == "{'pixel': [255, 128, 64, 255]}"
