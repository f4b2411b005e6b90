"""The replay server's FastAPI app (``urbanarena replay RUN_DIR``; docs/play.md).

Serves any stored arena or continuous-mode episode of a RUN_DIR step by step
(:class:`~urbanarena.report.replay_data.RunReplay`; continuous episodes:
:mod:`urbanarena.report.replay_continuous`): views re-rendered from the stored
poses (continuous: trajectory samples; the map in map mode), the map with the
trajectory so far, the model's thought, memory and answer, the stop reason and
the score. Token auth and bind rule as for
``play`` (one viewer token, printed with the URL).

=====================================================  ===========================================
``GET /``                                              the replay page (episode list + player)
``GET /api/episodes``                                  the stored episodes (id, task, agent, score ...)
``GET /api/episodes/{id}``                             one episode: poses, steps, outcome
``GET /api/episodes/{id}/view/{k}.png``                the camera view at state ``k`` (0 = start)
``GET /api/episodes/{id}/map/{k}.png``                 the map with the trajectory up to state ``k``
``GET /api/episodes/{id}/reference/{i}.png``           the task's reference image ``i``
``GET /api/episodes/{id}/trace/{path}``                a file of the episode's trace folder (confined)
``GET /static/{path}``                                 page scripts and styles (confined)
=====================================================  ===========================================

Unknown episodes, states out of range and paths outside their folder: ``404``.
"""

from __future__ import annotations

import threading

from fastapi import FastAPI, HTTPException, Response
from fastapi.responses import FileResponse

from urbanarena.errors import StoreError, UrbanArenaError
from urbanarena.render.encode import encode_image
from urbanarena.report.replay_data import EpisodeReplay, RunReplay
from urbanarena.web.auth import ParticipantTokens
from urbanarena.web.files import confined_file
from urbanarena.web.http import add_auth, health_route, render_page, static_route


def _png(img) -> Response:
    return Response(encode_image(img, "png").data, media_type="image/png")


def create_replay_app(replay: RunReplay, tokens: ParticipantTokens) -> FastAPI:
    """The replay app over ``replay`` (module docstring)."""
    app = FastAPI(title="urbanarena replay", docs_url=None, redoc_url=None, openapi_url=None)
    add_auth(app, tokens, who="viewer", where="the link `urbanarena replay` printed")
    health_route(app)
    static_route(app)
    render_lock = app.state.render_lock = threading.Lock()  # views are drawn one at a time (CLI's draw-ahead too)

    def episode(eid: int) -> EpisodeReplay:
        if eid not in replay.rows:
            raise HTTPException(404, f"no episode {eid}")
        try:
            return replay.episode(eid)
        except StoreError as e:
            raise HTTPException(404, str(e)) from None

    @app.get("/")
    def index():
        return render_page("replay.html.j2", run_dir=replay.run_dir.name,
                           attribution=replay.city.meta.attribution or "")

    @app.get("/api/episodes")
    def episodes():
        return {"run_dir": replay.run_dir.name, "city": replay.city.name, "episodes": replay.episodes()}

    @app.get("/api/episodes/{eid}")
    def one(eid: int):
        return episode(eid).summary()

    @app.get("/api/episodes/{eid}/view/{k}.png")
    def view(eid: int, k: int):
        ep = episode(eid)
        if not 0 <= k < ep.n_states:
            raise HTTPException(404, f"state {k} out of range 0..{ep.n_states - 1}")
        try:
            with render_lock:
                return _png(ep.view(k))
        except UrbanArenaError as e:
            raise HTTPException(404, str(e)) from None

    @app.get("/api/episodes/{eid}/map/{k}.png")
    def map_(eid: int, k: int):
        ep = episode(eid)
        if not 0 <= k < ep.n_states:
            raise HTTPException(404, f"state {k} out of range 0..{ep.n_states - 1}")
        return _png(ep.map(k))

    @app.get("/api/episodes/{eid}/reference/{i}.png")
    def reference(eid: int, i: int):
        ep = episode(eid)
        try:
            return _png(ep.reference_image(i))
        except (IndexError, OSError, ValueError):
            raise HTTPException(404, "no such reference image") from None

    @app.get("/api/episodes/{eid}/trace/{path:path}")
    def trace(eid: int, path: str):
        ep = episode(eid)
        f = confined_file(ep.trace_dir, path) if ep.trace_dir is not None else None
        if f is None:
            raise HTTPException(404, "not found")
        return FileResponse(f)

    return app


__all__ = ["create_replay_app"]
