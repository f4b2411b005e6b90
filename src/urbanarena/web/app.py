"""The play server's FastAPI app (``urbanarena play``; docs/play.md).

Routes (all but ``/healthz`` need the participant's token, :mod:`urbanarena.web.http`):

=========================  =====================================================
``GET /``                  the play page of the service's motion model (``service.page_template``:
                           arena or continuous; ``/?token=T`` sets the cookie first)
``GET /static/{path}``     page scripts and styles (confined to ``static/``)
``GET /api/state``         the participant's state (:meth:`PlayService.state`)
``POST /api/consent``      agree to the consent text
``POST /api/start``        start the next task; returns its first observation
``POST /api/act``          ``{"seq": N, "action": {"kind", "magnitude"?, "answer"?}}`` (arena) or
                           ``{"seq": N, "action": {"action": "move", "dir": ..., ...}}`` (continuous,
                           UrbanGround's action JSON): the action for observation ``N``; returns the next state
``GET /healthz``           ``{"ok": true}``
=========================  =====================================================

Errors: ``401`` without a valid token, ``409`` for an action on a view that is
no longer current (a double key press) or before consent, ``422`` for a
malformed action, ``500`` when an episode failed (message in ``detail``).
"""

from __future__ import annotations

from typing import Any

from fastapi import Body, FastAPI, HTTPException, Request

from urbanarena.web.http import add_auth, health_route, render_page, static_route
from urbanarena.web.play import PlayError, PlayService


def _call(fn, *args, **kwargs) -> Any:
    try:
        return fn(*args, **kwargs)
    except PlayError as e:
        raise HTTPException(e.status, str(e)) from None


def create_play_app(service: PlayService) -> FastAPI:
    """The play app over ``service`` (module docstring); its token registry is ``service.tokens``."""
    app = FastAPI(title="urbanarena play", docs_url=None, redoc_url=None, openapi_url=None)
    add_auth(app, service.tokens)
    health_route(app)
    static_route(app)

    @app.get("/")
    def index(request: Request):
        return render_page(service.page_template, participant=request.state.participant,
                           attribution=service.city.meta.attribution or "")

    @app.get("/api/state")
    def state(request: Request):
        return _call(service.state, request.state.participant)

    @app.post("/api/consent")
    def consent(request: Request):
        return _call(service.consent, request.state.participant)

    @app.post("/api/start")
    def start(request: Request):
        return _call(service.start, request.state.participant)

    @app.post("/api/act")
    def act(request: Request, body: dict = Body(...)):
        seq = body.get("seq")
        if isinstance(seq, bool) or not isinstance(seq, int):
            raise HTTPException(422, "seq (the observation number acted on) must be an integer")
        return _call(service.act, request.state.participant, body.get("action"), seq)

    return app


__all__ = ["create_play_app"]
