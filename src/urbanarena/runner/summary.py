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

Continuous configs (``urbanground``, the UrbanGround ladder) are summarised on the family's
per-episode metrics (``metrics.sr``, ``metrics.pna``, ``metrics.spr``, ``metrics.pcr`` ... in
percent) with ``by_family`` (per sub-family) and ``by_level`` (:func:`_summarize_continuous`).

Fuzzy-match answers (arena configs, :func:`fuzzy_counts`): how many ANSWER
episodes of ``fuzzy_match`` tasks were judged by the ``--judge`` model, how
many stayed unjudged (no judge configured, an unparsable verdict, a failed
judge request), how many the offline string match accepts (a separate
number, never part of ``evaluation_score``) and the judge's requests.

Model faults (:func:`fault_counts`, every config whose agent calls a model):
transport faults per type (``fault_<type>`` of the client counters:
``timeout``, ``connection``, ``http_429``, ``http_503`` ...), content faults
per type (unusable replies by parse-failure type: ``oversized``, ``empty``,
``refusal``, ``truncated``, ``no_json``, ``json_invalid``), replies per client
flag, and the retries, give-ups, rejections and protocol re-asks they caused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from urbanarena.errors import StoreError
from urbanarena.runner.config import stale_config_note
from urbanarena.runner.metadata import read_run_json
from urbanarena.runner.results import NO_JSON_PARSE_ERRORS
from urbanarena.runner.store import STORE_FILE, Store
from urbanarena.tasks.metrics import METRIC_KEYS, PERCENT_KEYS
from urbanarena.tasks.metrics.aggregate import summarize, summarize_groups
from urbanarena.tasks.generators.suite import SUITE_SIZES
from urbanarena.tasks.metrics.power import WORST_CASE_SD, mdd_table, minimum_detectable_difference, observed_mdd

#: summary keys of arena configs (module docstring)
ARENA_SUMMARY_KEYS: tuple[str, ...] = (
    "evaluation_score", "scored_success", "is_correct", "completed_by_answer", "distance_to_goal", "steps",
)
ARENA_PERCENT_KEYS = frozenset({"evaluation_score", "scored_success", "is_correct", "completed_by_answer"})


def _task_kind_of() -> dict[str, str]:
    """360CityArena ``TaskType`` name (the ``task_type`` column) -> our ``task_kind``."""
    from urbanarena.tasks.families.cityarena import TASK_KINDS

    return {tt: kind for kind, (tt, _) in TASK_KINDS.items()}


def by_family(rows: list[dict[str, Any]], n_resamples: int = 2000, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Arena rows per task family (``task_kind``: localization, landmark_language, ...): ``mean`` (mean
    ``evaluation_score`` x100, missing scores counted 0 by the caller), ``ci95`` (cluster bootstrap over
    tasks), ``episodes``, ``tasks``, ``metrics`` (all :data:`ARENA_SUMMARY_KEYS`) and ``mdd_observed``
    (:func:`~urbanarena.tasks.metrics.power.observed_mdd`, points)."""
    kinds = _task_kind_of()
    keyed = []
    for r in rows:
        k = kinds.get(str(r.get("task_type")))
        if k is None:
            k = (_json(r.get("details")) or {}).get("task_kind")
        if k:
            keyed.append({**r, "task_kind": k})
    groups = summarize_groups(keyed, "task_kind", ARENA_SUMMARY_KEYS, ARENA_PERCENT_KEYS, cluster_key="task_id",
                              n_resamples=n_resamples, seed=seed)
    out: dict[str, dict[str, Any]] = {}
    order = list(dict.fromkeys(kinds.values()))
    for kind in sorted(groups, key=lambda k: order.index(k) if k in order else len(order)):
        g = groups[kind]
        per_task: dict[str, list[float]] = {}
        for r in keyed:
            if r["task_kind"] == kind and r.get("evaluation_score") is not None:
                per_task.setdefault(str(r["task_id"]), []).append(float(r["evaluation_score"]))
        out[kind] = {"mean": g["metrics"]["evaluation_score"], "ci95": g["ci95"]["evaluation_score"],
                     "episodes": g["episodes"], "tasks": len(per_task), "metrics": g["metrics"], "ci95_all": g["ci95"],
                     "mdd_observed": observed_mdd(sum(v) / len(v) for v in per_task.values())}
    return out


def mdd_summary(n_tasks: int, families: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Minimum detectable differences (points; alpha 0.05, power 0.8, worst-case sd 0.5, two runs compared
    unpaired; :mod:`urbanarena.tasks.metrics.power`) at the named suite sizes and at this run's size."""
    return {
        "alpha": 0.05, "power": 0.8, "sd": WORST_CASE_SD,
        "sizes": mdd_table(SUITE_SIZES, len(_task_kind_of())),
        "this_run": {
            "tasks": n_tasks,
            "overall": round(100 * minimum_detectable_difference(n_tasks), 2) if n_tasks else None,
            "per_family": {k: round(100 * minimum_detectable_difference(f["tasks"]), 2) if f["tasks"] else None
                           for k, f in families.items()},
        },
    }


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


#: content-fault (unusable reply) types, in report order
CONTENT_FAULT_TYPES: tuple[str, ...] = tuple(
    t for t in ("oversized", "empty", "refusal", "truncated", "no_json", "json_invalid") if t in NO_JSON_PARSE_ERRORS)


def fault_counts(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Model faults summed over episodes, from each row's ``agent_stats`` (``None`` when no agent called a model).

    Returns: ``transport`` ({type: n} from the ``fault_<type>`` counters, zero types left out),
        ``transport_total``, ``content`` ({type: n} over :data:`CONTENT_FAULT_TYPES`, from
        ``parse_errors``), ``content_total``, ``flagged`` ({flag: n} from ``flagged_<flag>``: replies the
        client flagged ``empty``/``truncated``/``refusal``/``oversized``), ``retries`` (transport retries),
        ``gave_up`` (calls that failed after the retry limit), ``rejected`` (non-retryable statuses),
        ``reasks`` (protocol re-asks/re-requests), ``fallbacks`` ({kind: n}: steps that took the protocol's
        fallback action instead of a parsed one, e.g. ``cityseeker-v1``'s first heading / no stop, from
        ``agent_stats.fallbacks``; ``parse_error_steps``: arena steps consumed as ``PARSE_ERROR``),
        ``fallback_total``, ``repairs`` ({repair: n}: replies accepted only by a lenient reading, e.g.
        ``code_fence`` (the reference accepts a ``json``-tagged fence only) / ``surrounding_text`` /
        ``trailing_comma``, which 360CityArena's reference parser refuses; from ``agent_stats.repairs``), ``episodes_with_faults``, ``episodes``.
    """
    out: dict[str, Any] = {"transport": {}, "transport_total": 0, "content": {}, "content_total": 0, "flagged": {},
                           "retries": 0, "gave_up": 0, "rejected": 0, "reasks": 0, "fallbacks": {},
                           "fallback_total": 0, "repairs": {}, "episodes_with_faults": 0, "episodes": 0}
    seen = False
    for r in rows:
        st = _json(r.get("agent_stats")) or {}
        if not isinstance(st, dict) or "requests" not in st:
            continue
        seen = True
        out["episodes"] += 1
        n_faults = 0
        for k, v in st.items():
            if k.startswith("fault_") and isinstance(v, (int, float)) and v:
                out["transport"][k[6:]] = out["transport"].get(k[6:], 0) + int(v)
                n_faults += int(v)
            elif k.startswith("flagged_") and isinstance(v, (int, float)) and v:
                out["flagged"][k[8:]] = out["flagged"].get(k[8:], 0) + int(v)
        for k, v in (st.get("parse_errors") or {}).items():
            if k in CONTENT_FAULT_TYPES and v:
                out["content"][k] = out["content"].get(k, 0) + int(v)
                n_faults += int(v)
        for k in ("retries", "gave_up", "rejected", "reasks"):
            out[k] += int(st.get(k) or 0)
        fb = dict(st.get("fallbacks") or {}) if isinstance(st.get("fallbacks"), dict) else {}
        if st.get("parse_error_steps"):
            fb["parse_error_steps"] = st["parse_error_steps"]
        for k, v in fb.items():
            if isinstance(v, (int, float)) and v:
                out["fallbacks"][k] = out["fallbacks"].get(k, 0) + int(v)
        for k, v in (st.get("repairs") or {}).items() if isinstance(st.get("repairs"), dict) else ():
            if isinstance(v, (int, float)) and v:
                out["repairs"][k] = out["repairs"].get(k, 0) + int(v)
        out["episodes_with_faults"] += int(n_faults > 0)
    if not seen:
        return None
    out["transport"] = dict(sorted(out["transport"].items()))
    out["content"] = {k: out["content"][k] for k in CONTENT_FAULT_TYPES if k in out["content"]}
    out["flagged"] = dict(sorted(out["flagged"].items()))
    out["transport_total"] = sum(out["transport"].values())
    out["content_total"] = sum(out["content"].values())
    out["fallbacks"] = dict(sorted(out["fallbacks"].items()))
    out["fallback_total"] = sum(out["fallbacks"].values())
    out["repairs"] = dict(sorted(out["repairs"].items()))
    return out


def describe_faults(faults: dict[str, Any] | None) -> str | None:
    """One line of text for :func:`fault_counts` (``None`` when there were no model calls or no faults)."""
    if not faults or not (faults["transport_total"] or faults["content_total"] or faults["gave_up"]
                          or faults["rejected"] or faults.get("fallback_total")):
        return None
    def kinds(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"
    return (f"model faults: transport {faults['transport_total']} ({kinds(faults['transport'])}), "
            f"{faults['retries']} retries, {faults['gave_up']} gave up, {faults['rejected']} rejected; "
            f"content {faults['content_total']} ({kinds(faults['content'])}), {faults['reasks']} re-asks; "
            f"fallback actions {faults.get('fallback_total', 0)} ({kinds(faults.get('fallbacks') or {})}); "
            f"lenient readings {sum((faults.get('repairs') or {}).values())} ({kinds(faults.get('repairs') or {})}); "
            f"{faults['episodes_with_faults']} of {faults['episodes']} episodes affected")


def describe_config(c: dict[str, Any]) -> str:
    """One line: ``<hash12> agent=... protocol=... family=... max_steps=... [control=blind] (N episodes)``."""
    cfg = c.get("config") or {}
    return (
        f"{c['config_hash'][:12]} agent={c['agent']} protocol={c['protocol']} family={c['family']} "
        f"max_steps={cfg.get('max_steps')}"
        + (f" control={(cfg.get('control') or {}).get('label')}" if cfg.get("control") else "")
        + f" ({c['episodes']} episodes)"
        + (f" [older engine: config_version {cfg.get('config_version', 1)}]" if stale_config_note(cfg) else "")
    )


def error_reasons(rows: list[dict[str, Any]], limit: int = 3) -> list[dict[str, Any]]:
    """Why episodes ended in an error: ``[{"message", "episodes"}]``, the most frequent last lines of the stored
    error texts (exception type and message) first, at most ``limit`` of them."""
    counts: dict[str, int] = {}
    for r in rows:
        if r.get("stop_reason") == "error":
            lines = [ln for ln in str(r.get("error") or "").strip().splitlines() if ln.strip()]
            msg = lines[-1].strip()[:300] if lines else "(no error text)"
            counts[msg] = counts.get(msg, 0) + 1
    return [{"message": m, "episodes": n} for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def describe_errors(s: dict[str, Any]) -> str | None:
    """The line printed above every score table of a summary whose episodes errored, else ``None``."""
    if not s.get("errors"):
        return None
    why = "; ".join(f"{e['episodes']} x {e['message']}" for e in s.get("error_reasons") or [])
    return (f"errors: {s['errors']} of {s['episodes']} episodes ended in an agent or environment error and count as "
            f"failures in every score below" + (f" — {why}" if why else "") + " (rerun with --retry-errors)")


def _planned_and_stops(run_dir: Path, config_hash: str, rows: list[dict[str, Any]]) -> tuple[int | None, dict[str, int]]:
    """Planned episodes of ``config_hash`` (newest ``run.json`` record naming it, else ``None``) and the
    count of stored episodes per stop reason."""
    planned = None
    meta = read_run_json(run_dir)
    for rec in ([meta] + list(reversed(meta.get("history") or []))) if meta else []:
        n = (rec.get("planned_by_config") or {}).get(config_hash)
        if n is not None:
            planned = int(n)
            break
    stops: dict[str, int] = {}
    for r in rows:
        stops[str(r["stop_reason"])] = stops.get(str(r["stop_reason"]), 0) + 1
    return planned, stops


def _summarize_continuous(run_dir: Path, chosen: dict[str, Any], rows: list[dict[str, Any]], n_resamples: int,
                          seed: int) -> dict[str, Any]:
    """Summary of a continuous (``urbanground``) config: the family's per-episode metrics
    (:data:`urbanarena.tasks.families.urbanground.EPISODE_KEYS`, read from the ``metrics`` JSON; ``sr``,
    ``pna``, ``spr``, ``pcr`` ... in percent), ``by_family`` (per sub-family = task category) and
    ``by_level`` (L1 .. L5) and ``by_condition`` (weather / time of day: clear, dusk, night, cloudy, rain ...,
    as the paper's Table 1 reports; episodes recorded before the condition was stored count as clear), each
    with cluster-bootstrap CIs over tasks. The clusters are base tasks: the condition copies of one task
    (``details.base_task_id``, ``tasks generate --condition all``) are resampled together."""
    from urbanarena.tasks.families.urbanground import EPISODE_KEYS, PERCENT_KEYS as UG_PERCENT

    flat = []
    for r in rows:
        m = _json(r.get("metrics")) or {}
        d = _json(r.get("details")) or {}
        flat.append({**{k: m.get(k) for k in EPISODE_KEYS}, "task_id": r["task_id"], "seed": r["seed"],
                     "category": r.get("category"), "difficulty": r.get("difficulty"), "level": d.get("level"),
                     "condition": d.get("condition") or "clear", "base_task_id": d.get("base_task_id") or r["task_id"]})
    s = summarize(flat, EPISODE_KEYS, UG_PERCENT, cluster_key="base_task_id", n_resamples=n_resamples, seed=seed)
    kw = dict(cluster_key="base_task_id", n_resamples=n_resamples, seed=seed)
    fams = summarize_groups(flat, "category", EPISODE_KEYS, UG_PERCENT, **kw)
    levels = summarize_groups(flat, "level", EPISODE_KEYS, UG_PERCENT, **kw)
    conditions = summarize_groups(flat, "condition", EPISODE_KEYS, UG_PERCENT, **kw)  # the paper's Table 1 split
    planned, stops = _planned_and_stops(run_dir, chosen["config_hash"], rows)
    return {
        "protocol": chosen["protocol"], "episodes": s["episodes"], "metrics": s["metrics"], "ci95": s["ci95"],
        "counts": s.get("counts"), "by_family": fams, "by_level": levels, "by_condition": conditions,
        "by_category": s["by_category"],
        "by_difficulty": s["by_difficulty"], "config_hash": chosen["config_hash"], "config": chosen.get("config"),
        "agent": chosen["agent"], "family": chosen["family"], "tasks": len({r["task_id"] for r in rows}),
        "base_tasks": len({r["base_task_id"] for r in flat}),
        "seeds": sorted({r["seed"] for r in rows}), "errors": chosen["errors"], "error_reasons": error_reasons(rows),
        "stop_reasons": dict(sorted(stops.items())),
        "planned": planned, "complete": None if planned is None else s["episodes"] >= planned,
        "metric_keys": list(EPISODE_KEYS), "render_style": render_style_of(chosen.get("config")),
    }


def render_style_of(config: dict | None) -> str:
    """The render style an episode config's views were drawn in (``extra.arena_view.render_style`` for arena
    tasks, ``extra.render_style`` for continuous ones; absent = ``flat``, the only style before issue 14).
    Cities with real imagery ignore the style."""
    extra = (config or {}).get("extra") or {}
    return str((extra.get("arena_view") or {}).get("render_style") or extra.get("render_style") or "flat")


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
        "tasks", "seeds", "errors", "error_reasons" (:func:`error_reasons`), "stop_reasons", "planned", "complete",
        "metric_keys", "faults"}`` (``faults``: :func:`fault_counts`, ``None`` without model calls) (arena configs: also ``missing_scores``, ``fuzzy``
        (:func:`fuzzy_counts`), ``by_family`` (:func:`by_family`) and ``mdd`` (:func:`mdd_summary`); their
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
    if any(r.get("family") == "urbanground" for r in rows):
        return _summarize_continuous(run_dir, chosen, rows, n_resamples, seed)
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
    fams = by_family(rows, n_resamples=n_resamples, seed=seed) if arena else None
    protocol = chosen["protocol"]
    for grp in ("by_category", "by_difficulty"):
        for g in s[grp].values():
            g["protocol"] = protocol
    planned, stops = _planned_and_stops(run_dir, chosen["config_hash"], rows)
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
        "error_reasons": error_reasons(rows),
        "stop_reasons": dict(sorted(stops.items())),
        "planned": planned,
        "complete": None if planned is None else s["episodes"] >= planned,
        "metric_keys": list(keys),
        "render_style": render_style_of(chosen.get("config")),
        "faults": fault_counts(rows),
        **({"missing_scores": missing, "fuzzy": fuzzy, "by_family": fams,
            "mdd": mdd_summary(len({r["task_id"] for r in rows}), fams)} if arena else {}),
    }
