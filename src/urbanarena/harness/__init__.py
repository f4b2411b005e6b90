"""Adapters that run urbanarena episodes inside evaluation harnesses (above :mod:`urbanarena.runner`).

* :mod:`.episodes` — harness-neutral: a loaded suite (city + tasks), the VLM agent each family uses,
  one episode run through the runner's :class:`~urbanarena.runner.dispatch.EpisodeDispatcher` with a
  harness-supplied model client, and each family's headline score.
* :mod:`.bridge` — a duck-typed model client whose replies come from a harness model (a callable that
  takes provider-neutral messages), so the agents' protocols build the prompts and parse the replies.
* :mod:`.inspect_tasks` — inspect_ai tasks (``inspect eval urbanarena/suite``; the ``inspect`` extra).
* :mod:`.lmms` — an lmms-eval task of output type ``generate_until_agentic`` (the lmms-eval release's
  own environment; see docs/harnesses.md).

Layering: harness imports runner, agents and tasks; nothing below imports harness.
"""
