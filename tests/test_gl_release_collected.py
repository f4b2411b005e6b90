"""GL objects of a renderer dropped without ``release()`` are freed once it is collected (issue 27 item 4):
moderngl frees a GL object only on its ``release()``, so dropped renderers kept their buffers and textures in the
process's one context (the test suite's memory grew to 7.2 GB)."""

from __future__ import annotations

import gc
import os

import pytest

from urbanarena.render.scene3d import context as glc


class _Owner:
    pass


def test_free_runs_once_at_the_next_gl_use_after_collection(monkeypatch):
    calls = []
    monkeypatch.setattr(glc, "_collected", [])
    owner = _Owner()
    table = {"a": 1}
    glc.free_when_collected(owner, lambda t, tag: calls.append((dict(t), tag)), table, "x")
    gc.collect()
    assert calls == [] and glc._collected == []  # alive: nothing queued
    del owner
    gc.collect()
    assert calls == [] and len(glc._collected) == 1  # collected: queued, not yet freed (no GL use so far)
    glc._free_collected()
    assert calls == [({"a": 1}, "x")] and glc._collected == []
    glc._free_collected()
    assert len(calls) == 1


def test_a_failing_free_does_not_stop_the_others_and_other_pids_are_skipped(monkeypatch):
    calls = []

    def boom():
        raise RuntimeError("context lost")

    monkeypatch.setattr(glc, "_collected", [(os.getpid(), boom, ()), (os.getpid() + 1, calls.append, ("other",)),
                                            (os.getpid(), calls.append, ("mine",))])
    glc._free_collected()
    assert calls == ["mine"] and glc._collected == []


def test_a_dropped_renderer_frees_its_gl_objects():
    reason = glc.gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")
    from urbanarena.render.scene3d.renderer import SceneRenderer
    from urbanarena.render.scene3d.scene import Building, Road, Scene

    scene = Scene("t", (Building("b", [(-5, 5), (5, 5), (5, 15), (-5, 15)], 10.0),), (), (),
                  (Road("r", [(-20, 0), (20, 0)], 6.0, 2.0),))
    r = SceneRenderer(scene)
    r.render_view(0.0, 0.0, 0.0, 0.0, 90.0, 64, 48)
    kept = list(r._resources) + [fb for pair in r._fbos.values() for fb in pair if fb is not None]
    assert kept and all(type(o.mglo).__name__ != "InvalidObject" for o in kept)
    del r
    gc.collect()
    assert all(type(o.mglo).__name__ != "InvalidObject" for o in kept)  # queued until the next GL use
    glc.release_collected()
    assert all(type(o.mglo).__name__ == "InvalidObject" for o in kept)
    # an explicit release leaves nothing for the finalizer: collecting it afterwards frees nothing twice
    r2 = SceneRenderer(scene)
    r2.release()
    del r2
    gc.collect()
    glc.release_collected()
    assert glc._collected == []
