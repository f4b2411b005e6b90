"""Summaries of a run store: metric means with cluster-bootstrap 95 % CIs,
overall, per category and per difficulty
(:func:`urbanarena.tasks.metrics.aggregate.summarize`; tasks are the clusters).

A RUN_DIR may hold several configs (another agent, protocol or step limit run
into the same directory). A summary is always of **one** config: with a
single config it is chosen automatically; otherwise :func:`summarize_run`
raises :class:`~urbanarena.errors.StoreError` listing the configs, and the
caller picks one with ``config`` (a config-hash prefix).

Arena configs (360CityArena-style families) are summarised on
:data:`ARENA_SUMMARY_KEYS` instead of the navigation metrics: the official
``evaluation_score`` (a missing score — an ANSWER the validator could not
judge — counts 0, as 360CityArena's run mean does; their number is reported
as ``missing_scores``), ``scored_success``, ``is_correct`` (episodes without
a verdict left out), ``completed_by_answer`` (all in percent),
``distance_to_goal`` (metres, location tasks) and ``steps``.

Fuzzy-match answers (arena configs, :func:`fuzzy_counts`): how many ANSWER
episodes of ``fuzzy_match`` tasks were judged by the ``--judge`` model, how
many stayed unjudged (no judge configured, an unparsable verdict, a failed
judge request), how many the offline string match accepts (a separate
number, never part of ``evaluation_score``) and the judge's requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from urbanarena.errors import StoreError
from urbanarena.runner.metadata import read_run_json
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.tasks.metrics import METRIC_KEYS, PERCENT_KEYS
from urbanarena.tasks.metrics.aggregate import summarize

#: summary keys of arena configs (module docstring)
ARENA_SUMMARY_KEYS: tuple[str, ...] = (
    "evaluation_score", "scored_success", "is_correct", "completed_by_answer", "distance_to_goal", "steps",
)
ARENA_PERCENT_KEYS = frozenset({"evaluation_score", "scored_success", "is_correct", "completed_by_answer"})


def _pick_config(configs: list[dict[str, Any]], run_dir: Path, config: str | None) -> dict[str, Any]:
    if not configs:
        raise StoreError(f"{run_dir}: the run store holds no episodes yet")
    if config:
        hits = [c for c in configs if c["config_hash"].startswith(config)]
        if len(hits) != 1:
            raise StoreError(
                f"{run_dir}: --config {config!r} matches {len(hits)} configs; stored: "
                + "; ".join(describe_config(c) for c in configs)
            )
        return hits[0]
    if len(configs) > 1:
        raise StoreError(
            f"{run_dir}: holds {len(configs)} configs, choose one with --config HASH_PREFIX: "
            + "; ".join(describe_config(c) for c in configs)
        )
    return configs[0]


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return None
    return v


def fuzzy_counts(rows: list[dict[str, Any]], config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fuzzy-match bookkeeping of arena rows (module docstring).

    Returns: ``answers`` (ANSWER episodes scored by ``fuzzy_match``), ``judged`` (a readable verdict:
        ``evaluation_score`` 0 or 1), ``unjudged`` (= ``no_judge`` + ``unparsable`` + ``judge_errors``:
        ``evaluation_score`` null, counted 0), ``offline_matches`` (``offline_score`` 1), ``judge_model``
        (the config's ``--judge``, ``None`` without), ``judge_requests`` / ``judge_api_requests`` (the
        judge's calls, cache hits included / API calls only).
    """
    judge_cfg = ((config or {}).get("extra") or {}).get("judge") or {}
    jm = judge_cfg.get("model") or {}
    out = {"answers": 0, "judged": 0, "unjudged": 0, "no_judge": 0, "unparsable": 0, "judge_errors": 0,
           "offline_matches": 0, "judge_model": f"{jm['provider']}:{jm['model']}" if jm else None,
           "judge_requests": 0, "judge_api_requests": 0}
    for r in rows:
        if r.get("evaluation_metric") != "fuzzy_match" or r.get("status") != "ANSWER":
            continue
        out["answers"] += 1
        m = _json(r.get("metrics")) or {}
        usage = (_json(r.get("details")) or {}).get("judge_usage") or {}
        out["judge_requests"] += int(usage.get("requests") or 0)
        out["judge_api_requests"] += int(usage.get("api_requests") or 0)
        if m.get("offline_score") == 1:
            out["offline_matches"] += 1
        if r.get("validation_available"):
            out["judged"] += 1
            continue
        out["unjudged"] += 1
        if m.get("judge_model") is None:
            out["no_judge"] += 1
        elif usage.get("errors"):
            out["judge_errors"] += 1
        else:
            out["unparsable"] += 1
    return out


def describe_config(c: dict[str, Any]) -> str:
    """One line: ``<hash12> agent=... protocol=... family=... max_steps=... (N episodes)``."""
    cfg = c.get("config") or {}
    return (
        f"{c['config_hash'][:12]} agent={c['agent']} protocol={c['protocol']} family={c['family']} "
        f"max_steps={cfg.get('max_steps')} ({c['episodes']} episodes)"
    )


def summarize_run(
    run_dir: str | Path, config: str | None = None, n_resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Summary of one config of a run.

    Args:
        run_dir: the RUN_DIR.
        config: config-hash prefix (needed when the store holds several configs).
        n_resamples, seed: bootstrap parameters (see ``aggregate.summarize``).
    Returns: ``{"protocol", "episodes", "metrics", "ci95", "by_category",
        "by_difficulty", "counts", "config_hash", "config", "agent", "family",
        "tasks", "seeds", "errors", "stop_reasons", "planned", "complete",
        "metric_keys"}`` (arena configs: also ``missing_scores`` and ``fuzzy``
        (:func:`fuzzy_counts`); their
        ``metrics`` are keyed by :data:`ARENA_SUMMARY_KEYS`)
        (``planned``: episodes the latest invocation of this config planned,
        from ``run.json``; ``complete``: all of them are stored; both
        ``None`` without that record): ``metrics``/``ci95``
        keyed by every key of :data:`METRIC_KEYS` (rates in percent, ``None``
        where a key does not apply); each ``by_category``/``by_difficulty``
        group repeats ``protocol`` and has ``episodes``, ``metrics``,
        ``ci95``, ``counts``.
    Raises:
        StoreError: no store, an empty store, or an ambiguous/unknown config.
    """
    run_dir = Path(run_dir)
    with Store(run_dir / STORE_FILE, readonly=True) as store:
        chosen = _pick_config(store.configs(), run_dir, config)
        rows = list(store.rows([chosen["config_hash"]], parse_json=False))
    arena = any(r.get("status") is not None for r in rows)
    missing = 0
    fuzzy = fuzzy_counts(rows, chosen.get("config")) if arena else None
    if arena:
        rows = [dict(r) for r in rows]
        for r in rows:
            if r.get("status") is not None and r.get("evaluation_score") is None:
                r["evaluation_score"] = 0.0
                missing += 1
        keys, percent = ARENA_SUMMARY_KEYS, ARENA_PERCENT_KEYS
    else:
        keys, percent = METRIC_KEYS, PERCENT_KEYS
    s = summarize(rows, keys, percent, cluster_key="task_id", n_resamples=n_resamples, seed=seed)
    protocol = chosen["protocol"]
    for grp in ("by_category", "by_difficulty"):
        for g in s[grp].values():
            g["protocol"] = protocol
    planned = None
    meta = read_run_json(run_dir)
    for rec in ([meta] + list(reversed(meta.get("history") or []))) if meta else []:
        n = (rec.get("planned_by_config") or {}).get(chosen["config_hash"])
        if n is not None:
            planned = int(n)
            break
    stops: dict[str, int] = {}
    for r in rows:
        stops[str(r["stop_reason"])] = stops.get(str(r["stop_reason"]), 0) + 1
    return {
        "protocol": protocol,
        "episodes": s["episodes"],
        "metrics": s["metrics"],
        "ci95": s["ci95"],
        "by_category": s["by_category"],
        "by_difficulty": s["by_difficulty"],
        "counts": s.get("counts"),
        "config_hash": chosen["config_hash"],
        "config": chosen.get("config"),
        "agent": chosen["agent"],
        "family": chosen["family"],
        "tasks": len({r["task_id"] for r in rows}),
        "seeds": sorted({r["seed"] for r in rows}),
        "errors": chosen["errors"],
        "stop_reasons": dict(sorted(stops.items())),
        "planned": planned,
        "complete": None if planned is None else s["episodes"] >= planned,
        "metric_keys": list(keys),
        **({"missing_scores": missing, "fuzzy": fuzzy} if arena else {}),
    }
