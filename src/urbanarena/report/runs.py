"""Loading stored runs for the HTML report: one :class:`ReportRun` per config of each RUN_DIR.

For every RUN_DIR: the store's configs (``Store.configs``), for each config its summary
(:func:`urbanarena.runner.summary.summarize_run`) and its rows (parsed JSON), ``run.json``
(:func:`urbanarena.runner.metadata.read_run_json`), its kind (:func:`urbanarena.report.kinds.kind_for_rows`:
arena, graph or urbanground), and — for trajectory maps and the rules that need positions — the run's city
and, for graph and urbanground configs, its tasks.

The city is looked up from ``run.json`` (``city.directory``, then ``city.spec``, then the cached
``city.name``; a relative path is tried as given and relative to the RUN_DIR's parent) and accepted only
when its content hash equals the recorded one. An explicit ``city`` argument is tried first. Tasks are
loaded only for graph and urbanground configs (kinds with ``needs_tasks``) from ``run.json``
``tasks.spec`` (not for frozen-suite names, whose loading redraws images); a task is used only when its
hash equals the episode's stored ``task_hash``.
When something cannot be loaded the run keeps a note saying why, and the report leaves out what
needed it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.errors import StoreError, UrbanArenaError
from urbanarena.report.kinds import ARENA, RunKind, kind_for_rows
from urbanarena.runner.metadata import read_run_json
from urbanarena.runner.run_facts import RunFacts, run_facts
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.runner.summary import summarize_run

#: TASKS values the report does not resolve (frozen suites: resolving redraws their images)
_SKIP_TASK_SPECS = frozenset({"default", "mini", "standard", "full"})


@dataclass
class ReportRun:
    """One config of one RUN_DIR.

    Attributes:
        label: unique display name (agent, model, and the RUN_DIR name / config hash when needed).
        run_dir: the RUN_DIR.
        summary: :func:`~urbanarena.runner.summary.summarize_run` of this config.
        rows: its stored episodes (parsed JSON columns), store order.
        meta: ``run.json`` (``None`` when absent).
        arena: arena config (rows carry ``status``).
        success_key: graph success key (``sr`` for urbanground configs, ``None`` for arena configs).
        kind: the run's :class:`~urbanarena.report.kinds.RunKind` (what the report does per kind).
        city: the run's :class:`~urbanarena.world.city.City` or ``None`` (see ``notes``).
        tasks: ``{task_id: Task}`` whose hash matches the stored episodes (graph and urbanground configs),
            or ``{}``.
        notes: why the city or tasks could not be loaded.
    """

    label: str
    run_dir: Path
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    meta: dict[str, Any] | None
    arena: bool
    success_key: str | None
    kind: RunKind = ARENA
    city: Any = None
    tasks: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def protocol(self) -> str:
        return str(self.summary["protocol"])

    @property
    def facts(self) -> RunFacts:
        """Strategies, rounds, render style, population and privilege (:func:`~urbanarena.runner.run_facts.run_facts`)."""
        cached = self.__dict__.get("_facts")
        if cached is None:
            cached = self.__dict__["_facts"] = run_facts(self.summary, self.run_dir, meta=self.meta or {})
        return cached

    @property
    def agent(self) -> str:
        return str(self.summary["agent"])

    @property
    def model(self) -> str | None:
        """``provider:model`` of the first episode that called a model, else ``None``."""
        for r in self.rows:
            if r.get("model"):
                return f"{r['provider']}:{r['model']}" if r.get("provider") else str(r["model"])
        return None

    @property
    def judge(self) -> str | None:
        """The fuzzy-match judge model (arena ``--judge``), else ``None``."""
        fz = self.summary.get("fuzzy") or {}
        if fz.get("judge_model"):
            return str(fz["judge_model"])
        j = (self.meta or {}).get("judge")
        if isinstance(j, dict) and j.get("model"):
            m = j["model"]
            return f"{m.get('provider')}:{m.get('model')}" if isinstance(m, dict) else str(m)
        return None

    @property
    def task_source(self) -> str:
        """``tasks.spec`` of ``run.json`` with the frozen suite's name and the source hash prefix."""
        t = (self.meta or {}).get("tasks") or {}
        parts = [str(t.get("spec") or "?")]
        suite = (t.get("suite_check") or {}).get("suite")
        if suite:
            parts.append(f"suite {suite}")
        if t.get("source_hash"):
            parts.append(f"sha256 {str(t['source_hash'])[:12]}")
        return " · ".join(parts)

    @property
    def city_name(self) -> str | None:
        return ((self.meta or {}).get("city") or {}).get("name") or (self.city.name if self.city else None)

    @property
    def attribution(self) -> str | None:
        """The city's attribution text (e.g. "© OpenStreetMap contributors"), ``None`` when unknown."""
        return getattr(getattr(self.city, "meta", None), "attribution", None)


def _candidates(run_dir: Path, meta: dict[str, Any] | None, override: str | None) -> list[str]:
    out: list[str] = [override] if override else []
    c = (meta or {}).get("city") or {}
    for key in ("directory", "spec"):
        v = c.get(key)
        if not v:
            continue
        out.append(str(v))
        p = Path(str(v))
        if not p.is_absolute() and ":" not in str(v):
            out.append(str(run_dir.resolve().parent / p))
    if c.get("name"):
        out.append(str(c["name"]))
    return list(dict.fromkeys(out))


def load_city_for(run_dir: Path, meta: dict[str, Any] | None, override: str | None = None,
                  cache: dict[str, Any] | None = None) -> tuple[Any, Any, str | None]:
    """``(city, source_directory, note)``: the run's city (module docstring) or ``(None, None, why)``."""
    from urbanarena.world.resolve import resolve_city_source

    want = ((meta or {}).get("city") or {}).get("content_hash")
    tried = []
    for spec in _candidates(run_dir, meta, override):
        key = f"city::{spec}"
        if cache is not None and key in cache:
            got = cache[key]
        else:
            try:
                city, src = resolve_city_source(spec)
                got = (city, src.directory, None)
            except (UrbanArenaError, OSError, ValueError) as e:
                got = (None, None, str(e).splitlines()[0] if str(e) else type(e).__name__)
            if cache is not None:
                cache[key] = got
        city, directory, err = got
        if city is None:
            tried.append(f"{spec!r}: {err}")
            continue
        if want and city.content_hash != want:
            tried.append(f"{spec!r}: content hash {city.content_hash[:12]} is not the run's {want[:12]}")
            continue
        return city, directory, None
    if not tried:
        return None, None, "run.json names no city"
    return None, None, "city not loadable (" + "; ".join(tried) + ")"


def _load_tasks(run: ReportRun, city_dir: Any) -> None:
    from urbanarena.tasks.resolve import resolve_task_set, task_hash

    spec = ((run.meta or {}).get("tasks") or {}).get("spec")
    if not spec:
        run.notes.append("tasks: run.json names no task source; failure rules, rescoring and maps need the goals")
        return
    if spec in _SKIP_TASK_SPECS:
        run.notes.append(f"tasks: {spec!r} is a frozen suite, not reloaded by the report")
        return
    try:
        ts = resolve_task_set(str(spec), run.city, city_dir)
    except (UrbanArenaError, OSError, ValueError) as e:
        run.notes.append(f"tasks {spec!r} not loadable: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        return
    hashes = {str(r["task_id"]): r.get("task_hash") for r in run.rows}
    ok = {t.task_id: t for t in ts.tasks if t.task_id in hashes and task_hash(t) == hashes[t.task_id]}
    if len(ok) < len(hashes):
        run.notes.append(f"tasks: {len(hashes) - len(ok)} of {len(hashes)} stored tasks not found unchanged in "
                         f"{spec!r}")
    run.tasks = ok


def _label(s: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    people = {str(r.get("agent")) for r in rows if str(r.get("agent", "")).startswith("human:")}
    if people:  # a human baseline (urbanarena play): episodes stored as human:<participant>
        return f"human ({len(people)} participant{'s' if len(people) != 1 else ''})"
    for r in rows:
        if r.get("model"):
            return f"{s['agent']} {r['model']}"
    return str(s["agent"])


def load_runs(run_dirs: list[str | Path], *, n_resamples: int = 2000, seed: int = 0, city: str | None = None,
              load_context: bool = True) -> list[ReportRun]:
    """Every config of every RUN_DIR as a :class:`ReportRun`, in argument order then store order.

    Args:
        run_dirs: RUN_DIRs (at least one).
        n_resamples, seed: bootstrap parameters of the summaries.
        city: a CITY argument tried before ``run.json``'s (all runs).
        load_context: load cities and tasks (maps, failure rules, rescoring); off: rows and summaries only.
    Raises:
        StoreError: no RUN_DIR given, a RUN_DIR that is missing or not a directory, holds no store, or
            a store without episodes.
    """
    if not run_dirs:
        raise StoreError("no RUN_DIR given")
    runs: list[ReportRun] = []
    cache: dict[str, Any] = {}
    for rd in run_dirs:
        run_dir = Path(rd)
        if not run_dir.exists():
            raise StoreError(f"{run_dir}: no such RUN_DIR")
        if not run_dir.is_dir():
            raise StoreError(f"{run_dir}: not a directory (a RUN_DIR is expected)")
        with Store(run_dir / STORE_FILE, readonly=True) as store:
            configs = store.configs()
            if not configs:
                raise StoreError(f"{run_dir}: the run store holds no episodes")
            rows_by = {c["config_hash"]: list(store.rows([c["config_hash"]])) for c in configs}
        meta = read_run_json(run_dir)
        for c in configs:
            s = summarize_run(run_dir, config=c["config_hash"], n_resamples=n_resamples, seed=seed)
            rows = rows_by[c["config_hash"]]
            kind = kind_for_rows(rows)
            arena = kind is ARENA
            runs.append(ReportRun(_label(s, rows), run_dir, s, rows, meta, arena,
                                  None if arena else kind.success_key, kind))
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    for r in runs:
        if seen[r.label] > 1:
            r.label = f"{r.label} [{r.run_dir.name}·{r.summary['config_hash'][:8]}]"
    if load_context:
        for r in runs:
            r.city, city_dir, note = load_city_for(r.run_dir, r.meta, city, cache)
            if note:
                r.notes.append(note)
            elif r.kind.needs_tasks:
                _load_tasks(r, city_dir)
    return runs


__all__ = ["ReportRun", "load_city_for", "load_runs"]
