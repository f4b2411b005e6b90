"""``run --dry-run`` for an import-path agent (``--agent module.path:Callable``) without calling user code.

:func:`~urbanarena.runner.driver.prepare` builds one agent to check its parameters and its fit to the tasks,
which for ``module.path:Callable`` means calling the user's callable. A dry run must not run user code, so
for such an agent it stops short of that: it checks the request's own values
(:func:`~urbanarena.runner.driver.check_request`), imports the module and checks the attribute exists and is
callable (importing a module runs its top-level code, which cannot be avoided when resolving a Python import
path; the report says so), reads the city and the tasks, and counts the episodes. The agent's parameters and
whether it can act in the tasks' env are checked by the real run, before RUN_DIR is created.
"""

from __future__ import annotations

from urbanarena.runner.arena import ArenaViewSettings
from urbanarena.runner.backend_base import import_callable
from urbanarena.runner.run_request import RunRequest
from urbanarena.tasks.resolve import resolve_task_set
from urbanarena.world.resolve import resolve_city_source


def is_import_path_agent(name: str) -> bool:
    """Whether ``--agent name`` is ``module.path:Callable`` (``bc:CHECKPOINT`` is a registry agent)."""
    return ":" in name and not name.startswith("bc:")


def import_path_dry_run(req: RunRequest) -> str:
    """The dry-run report of a request whose agent is an import path (module docstring); calls nothing.

    Raises: what :func:`~urbanarena.runner.driver.prepare` raises for the request's values, the city and the
    tasks; AgentSpecError for a module that does not import or an attribute that is missing or not callable.
    """
    from urbanarena.runner.driver import check_request

    check_request(req)
    target = import_callable(req.agent)  # imports the module (its top-level code runs); never calls target
    arena_view = ArenaViewSettings(**(req.arena_view or {}))
    city, source = resolve_city_source(req.city)
    task_set = resolve_task_set(req.tasks, city, source.directory, render_style=arena_view.render_style)
    tasks = task_set.tasks[: req.limit] if req.limit else list(task_set.tasks)
    n = len(tasks) * req.seeds
    kind = "class" if isinstance(target, type) else "callable"
    return (f"dry run: agent {req.agent!r} is an import-path agent: its module was imported (importing runs the "
            f"module's top-level code) and the {kind} was found but not called, so its parameters and its fit to "
            f"the tasks are checked only by a real run; {n} episodes would run ({len(tasks)} tasks x {req.seeds} "
            f"seeds) on city {city.name!r}")


__all__ = ["import_path_dry_run", "is_import_path_agent"]
