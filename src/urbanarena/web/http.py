"""FastAPI glue shared by the play and replay servers: token auth, security headers, pages, static files.

* :func:`add_auth` — every route except ``/healthz`` needs a participant token
  (:mod:`urbanarena.web.auth`): ``Authorization: Bearer``, or the ``ua_token``
  cookie set by the entry URL ``/?token=...`` (which redirects to ``/`` so the
  token leaves the address bar). No or an unknown token: ``401``.
* Security headers on every response: a Content-Security-Policy allowing only
  this origin's scripts and styles (no inline script) and ``data:`` images,
  ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
  ``X-Frame-Options: DENY`` and ``Cache-Control: no-store``.
* :func:`static_route` — ``/static/{path}`` from the package's ``static/``
  folder through :func:`~urbanarena.web.files.confined_file`.
* :func:`render_page` — the Jinja2 page templates in ``templates/``
  (autoescaped).

Needs the ``web`` extra (fastapi, uvicorn, jinja2).
"""

from __future__ import annotations

import html

from pathlib import Path
from urllib.parse import urlencode
from typing import Any, Callable

import jinja2
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response

from urbanarena.web.auth import COOKIE, ParticipantTokens, bearer_token
from urbanarena.web.files import confined_file

STATIC_DIR = Path(__file__).parent / "static"
TEMPLATES_DIR = Path(__file__).parent / "templates"
#: paths that need no token
OPEN_PATHS = frozenset({"/healthz"})

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
                          autoescape=jinja2.select_autoescape(default=True, default_for_string=True))


def render_page(name: str, **context: Any) -> HTMLResponse:
    """The template ``templates/<name>`` rendered with ``context`` (autoescaped) as an HTML response."""
    return HTMLResponse(_ENV.get_template(name).render(**context))


def request_token(request: Request) -> str | None:
    """The token a request carries: the ``Authorization: Bearer`` header, else the ``ua_token`` cookie."""
    return bearer_token(request.headers.get("authorization")) or request.cookies.get(COOKIE)


def add_auth(app: FastAPI, tokens: ParticipantTokens, who: str = "participant",
             where: str = "the link `urbanarena play` printed for you") -> None:
    """Install the token check and the security headers on ``app`` (module docstring).

    The participant of an authorised request is ``request.state.participant``. ``who`` names the token in a
    401 reply (``participant`` for play, ``viewer`` for replay) and ``where`` says where its link was printed.
    """
    need = f"{who} token required: open {where} (it carries ?token=...)"

    @app.middleware("http")
    async def _auth(request: Request, call_next: Callable):
        path = request.url.path
        if path not in OPEN_PATHS:
            entry = request.query_params.get("token") if path == "/" else None
            if entry is not None and tokens.participant_for(entry) is not None:
                # the rest of the query (a replay link's ?episode=...) survives the redirect; only the token goes
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                resp: Response = RedirectResponse("/" + (f"?{urlencode(rest)}" if rest else ""), status_code=303)
                resp.set_cookie(COOKIE, entry, httponly=True, samesite="strict", path="/",
                                secure=request.url.scheme == "https")
                return _secure(resp)
            pid = tokens.participant_for(request_token(request))
            if pid is None:
                if request.headers.get("accept", "").startswith("text/html"):
                    resp = HTMLResponse(f"<!doctype html><title>401</title><h1>401: {html.escape(who)} token "
                                        f"required</h1><p>Open {html.escape(where)}: it carries the token.</p>",
                                        status_code=401)
                else:
                    resp = JSONResponse({"detail": need}, status_code=401)
                resp.headers["WWW-Authenticate"] = "Bearer"
                return _secure(resp)
            request.state.participant = pid
        return _secure(await call_next(request))


def _secure(resp: Response) -> Response:
    for k, v in SECURITY_HEADERS.items():
        resp.headers.setdefault(k, v)
    return resp


def static_route(app: FastAPI) -> None:
    """``GET /static/{path}``: a file of the package's ``static/`` folder (confined; else 404)."""

    @app.get("/static/{path:path}")
    def _static(path: str):
        f = confined_file(STATIC_DIR, path)
        if f is None:
            raise HTTPException(404, "not found")
        return FileResponse(f)


def health_route(app: FastAPI) -> None:
    """``GET /healthz``: ``{"ok": true}`` without a token (readiness probe; says nothing else)."""

    @app.get("/healthz")
    def _health():
        return {"ok": True}


__all__ = ["CSP", "OPEN_PATHS", "SECURITY_HEADERS", "STATIC_DIR", "add_auth", "health_route", "render_page",
           "request_token", "static_route"]
