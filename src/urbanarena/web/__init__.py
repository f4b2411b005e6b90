"""Human play and replay in the browser (``urbanarena play``, ``urbanarena replay``; docs/play.md).

Modules: :mod:`~urbanarena.web.auth` (participant tokens, bind rule), :mod:`~urbanarena.web.study`
(consent, practice, counterbalanced order, time limits, anonymised export), :mod:`~urbanarena.web.human`
(the human as an arena agent), :mod:`~urbanarena.web.play_service` (participants and episodes),
:mod:`~urbanarena.web.play` (opening a study: the service of the tasks' motion model),
:mod:`~urbanarena.web.app` (play routes), :mod:`~urbanarena.web.replay` (replay routes),
:mod:`~urbanarena.web.http` and :mod:`~urbanarena.web.files` (auth middleware, headers, confined files).
The servers need the ``web`` extra (fastapi, uvicorn, jinja2); ``auth``, ``study`` and ``human`` do not.
"""
