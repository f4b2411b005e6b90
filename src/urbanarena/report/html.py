"""The static HTML report of one or several stored runs (``urbanarena report RUN_DIR ... --out FILE``).

One self-contained file (figures are inline base64 PNGs; no scripts, no external resources), rendered
from ``templates/report.html.j2`` by jinja2 with autoescaping on, so every stored string (agent names,
answers, task ids, paths) is escaped.

Layout: a table of every run (config) read; then one section per **protocol** — runs of different
protocols are never put in one score table; the runs table, which does mix them, says so. A section
holds, each table captioned with the protocol id, every run's task source (``run.json`` ``tasks.spec``,
frozen-suite name, source hash) and the judge model:

* scores with 95 % cluster-bootstrap CIs (:func:`urbanarena.runner.summary.summarize_run`), by the run's
  kind (:mod:`urbanarena.report.kinds`, chosen from its rows): arena runs per family (evaluation score
  x100) and overall; graph runs their navigation metrics, then the success measure per difficulty and per
  category; urbanground runs SR, PNA, SPR, PCR (route efficiency, on-time ratio ...) overall, per
  sub-family and per level; and a chart of the success measure per difficulty (urbanground: per level);
* error counters, tokens and latency (:func:`~urbanarena.report.episodes.counters`);
* failure causes (:mod:`urbanarena.report.failures`);
* threshold sensitivity (:mod:`urbanarena.report.sensitivity`);
* paired bootstrap tests of every run against a baseline run per family, Holm-corrected over the
  section's families x runs (:mod:`urbanarena.report.significance`);
* trajectory maps of a few episodes per run over the city's street graph (:mod:`urbanarena.report.charts`).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2

import urbanarena
from urbanarena.errors import UrbanArenaError
from urbanarena.runner.summary import describe_errors
from urbanarena.report.charts import difficulty_chart, trajectory_map
from urbanarena.report.episodes import counters
from urbanarena.report.failures import CAUSES, OTHER_BUCKETS, breakdown
from urbanarena.report.kinds import LABELS, cell, num
from urbanarena.report.runs import ReportRun, load_runs
from urbanarena.report.sensitivity import SCALES, sensitivity
from urbanarena.report.significance import holm
from urbanarena.tasks.metrics.paired import paired_bootstrap, per_task_scores

#: significance level of the Holm-corrected tests
ALPHA = 0.05
_num, _cell = num, cell


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in s).strip("-").lower() or "x"


def _score_rows(run: ReportRun) -> list[dict[str, Any]]:
    """Rows with ``score`` (the kind's per-episode score: arena evaluation score, missing 0; graph success
    key; urbanground ``sr``) and ``fam`` (the kind's family: arena task family, graph family, urbanground
    sub-family)."""
    return [{"task_id": str(r["task_id"]), "task_hash": r.get("task_hash"), "score": run.kind.score(r),
             "fam": run.kind.family_of(r)} for r in run.rows]


def _caption(group: list[ReportRun]) -> dict[str, Any]:
    sources = {r.label: r.task_source for r in group}
    judges = sorted({r.judge or "none" for r in group})
    return {"protocol": group[0].protocol, "sources": sources, "judge": ", ".join(judges),
            "mixed_sources": len(set(sources.values())) > 1, "mixed_judges": len(judges) > 1}


def _chart(group: list[ReportRun]) -> str | None:
    kind = group[0].kind
    key = kind.success_key
    values = {r.label: {d: (g["metrics"].get(key), g["ci95"].get(key)) for d, g in
                        (r.summary.get(kind.chart_group) or {}).items()} for r in group}
    if not any(values.values()):
        return None
    return difficulty_chart(values, ylabel=f"{LABELS.get(key, key)}", title=f"{group[0].protocol}: "
                            f"{LABELS.get(key, key)} by {kind.chart_group_label} (95 % CI)")


def _geoms(run: ReportRun) -> list[Any]:
    return [run.kind.geometry(r, run.city, run.tasks.get(str(r["task_id"]))) for r in run.rows]


def _counters(group: list[ReportRun]) -> list[dict[str, Any]]:
    out = []
    for run in group:
        cs = [counters(r) for r in run.rows]
        n = len(cs)

        def tot(k: str) -> int | float | None:
            vals = [c[k] for c in cs if c[k] is not None]
            return sum(vals) if vals else None

        def per_ep(k: str) -> str:
            v = tot(k)
            return "–" if v is None else f"{v / n:.1f}"

        lat = tot("llm_latency_s")
        req = tot("llm_requests")
        wall = tot("wall_s")
        out.append({
            "label": run.label, "episodes": n, "agent_errors": tot("agent_error"), "parse_errors": tot("parse_errors"),
            "invalid_actions": tot("invalid_actions"),
            "blocked_moves": tot("blocked_moves") if run.kind.has_blocked_moves else None,
            "llm_requests": req, "llm_errors": tot("llm_errors"), "prompt_tokens": tot("prompt_tokens"),
            "completion_tokens": tot("completion_tokens"),
            "tokens_per_episode": (f"{((tot('prompt_tokens') or 0) + (tot('completion_tokens') or 0)) / n:.0f}"
                                   if tot("prompt_tokens") is not None else "–"),
            "latency_per_request": f"{lat / req:.2f}" if lat is not None and req else "–",
            "steps_per_episode": per_ep("steps"),
            "wall_per_episode": "–" if wall is None else f"{wall / n:.2f}",
            "stop_reasons": ", ".join(f"{k} {v}" for k, v in run.summary["stop_reasons"].items()),
        })
    return out


def _failures(group: list[ReportRun], geoms: dict[str, list[Any]], classifier: Any = None,
              classifier_max: int = 40) -> list[dict[str, Any]]:
    out = []
    for run in group:
        causes = [run.kind.classify(r, g, run.tasks.get(str(r["task_id"]))) for r, g in zip(run.rows, geoms[run.label])]
        b = breakdown(causes)
        f = b["failures"]
        item = {"label": run.label, "episodes": b["episodes"], "successes": b["successes"], "failures": f,
                "counts": [{"bucket": k, "n": b["counts"][k],
                            "pct": f"{100 * b['counts'][k] / f:.0f} %" if f else "–"}
                           for k in CAUSES + OTHER_BUCKETS], "llm": None}
        if classifier is not None:
            from urbanarena.report.failure_llm import UNPARSED, classify_run

            order = sorted(range(len(run.rows)), key=lambda i: (str(run.rows[i]["task_id"]), int(run.rows[i]["seed"])))
            items = [(run.rows[i], geoms[run.label][i], run.tasks.get(str(run.rows[i]["task_id"])), causes[i])
                     for i in order if causes[i] in CAUSES or causes[i] == "Unclassified"]
            res = classify_run(classifier, items, classifier_max)
            item["llm"] = {**res, "model": classifier.model_id,
                           "cells": [{"bucket": k, "n": res["counts"][k]} for k in (*CAUSES, UNPARSED)],
                           "agreement_text": "–" if res["agreement"] is None else f"{100 * res['agreement']:.0f} %",
                           "kappa_text": "–" if res["kappa"] is None else f"{res['kappa']:.2f}"}
        out.append(item)
    return out


def _sensitivity(group: list[ReportRun]) -> dict[str, Any]:
    means: dict[float, dict[str, float]] = {s: {} for s in SCALES}
    left_out = []
    for run in group:
        vals: dict[float, float] = {}
        for s in SCALES:
            scores = [run.kind.rescore(r, s, run.tasks.get(str(r["task_id"])), run.city) for r in run.rows]
            if not scores or any(v is None for v in scores):
                break
            vals[s] = 100.0 * sum(scores) / len(scores)
        if len(vals) < len(SCALES):
            left_out.append(run.label)
            continue
        for s, v in vals.items():
            means[s][run.label] = v
    labels = list(means[1.0])
    taus = sensitivity(means) if labels else {s: None for s in SCALES}
    return {"scales": list(SCALES), "rows": [{"label": a, "cells": [{"text": f"{means[s][a]:.1f}",
                                                                      "mean": _num(means[s][a])} for s in SCALES]}
                                             for a in labels],
            "taus": [{"text": "–" if taus[s] is None else f"{taus[s]:.2f}", "value": _num(taus[s])} for s in SCALES],
            "left_out": left_out}


def _significance(group: list[ReportRun], baseline: str | None, n_boot: int, min_tasks: int,
                  seed: int) -> dict[str, Any]:
    if len(group) < 2:
        return {"tests": [], "note": "one run in this protocol: nothing to compare"}
    base = next((r for r in group if baseline is not None and r.label == baseline), group[0])
    bs = _score_rows(base)
    tests = []
    for other in group:
        if other is base:
            continue
        os_ = _score_rows(other)
        fams = base.kind.family_order({x["fam"] for x in bs if x["fam"] is not None})
        for fam in fams:
            a_rows = [x for x in os_ if x["fam"] == fam]
            b_rows = [x for x in bs if x["fam"] == fam]
            a_hash = {x["task_id"]: x["task_hash"] for x in a_rows}
            b_hash = {x["task_id"]: x["task_hash"] for x in b_rows}
            common = sorted(t for t in a_hash.keys() & b_hash.keys() if a_hash[t] == b_hash[t])
            am = per_task_scores(a_rows, "score", missing_as=None)
            bm = per_task_scores(b_rows, "score", missing_as=None)
            common = [t for t in common if t in am and t in bm]
            test = {"model": other.label, "family": fam, "n_tasks": len(common), "diff": None, "ci95": None,
                    "p_value": None}
            if len(common) >= max(1, min_tasks):
                res = paired_bootstrap([am[t] for t in common], [bm[t] for t in common], n_resamples=n_boot,
                                       seed=[seed, zlib.crc32(fam.encode()), zlib.crc32(other.label.encode())],
                                       alternative="two-sided")
                test.update(diff=100 * res.mean_diff, ci95=[100 * res.ci95[0], 100 * res.ci95[1]],
                            p_value=res.p_value)
            tests.append(test)
    adj = holm([t["p_value"] for t in tests])
    for t, a in zip(tests, adj):
        t["p_holm"] = a
        t["significant"] = a is not None and a <= ALPHA
        t["diff_text"] = "–" if t["diff"] is None else f"{t['diff']:+.1f}"
        t["ci_text"] = "–" if t["ci95"] is None else f"[{t['ci95'][0]:+.1f}, {t['ci95'][1]:+.1f}]"
        t["p_text"] = "–" if t["p_value"] is None else f"{t['p_value']:.4f}"
        t["p_holm_text"] = "–" if a is None else f"{a:.4f}"
        t["diff_num"], t["p_num"], t["p_holm_num"] = _num(t["diff"]), _num(t["p_value"]), _num(a)
    m = sum(1 for t in tests if t["p_value"] is not None)
    return {"tests": tests, "baseline": base.label, "m": m, "note": None}


def _strategy_table(group: list[ReportRun], success_key: str | None) -> list[dict[str, Any]]:
    """One row per run of a protocol section when some run composed strategies (or ran several rounds):
    label, agent, strategies, rounds, privileged, and the success rate with its 95 % CI where the kind has one.
    Empty when no run of the group used strategies."""
    if not any(r.facts.strategies or r.facts.rounds != 1 for r in group):
        return []
    rows = []
    for r in group:
        metrics, ci = r.summary.get("metrics") or {}, (r.summary.get("ci95") or {})
        key = r.success_key or success_key
        value = metrics.get(key) if key else None
        lo_hi = ci.get(key) if key else None
        text = "–" if value is None else f"{value:.1f}" + (f" [{lo_hi[0]:.1f}, {lo_hi[1]:.1f}]" if lo_hi else "")
        rows.append({"label": r.label, "agent": r.agent, "key": key, "strategies": r.facts.strategies or "none",
                     "rounds": r.facts.rounds, "privileged": r.facts.privileged_what(r.agent) or "no",
                     "success": text})
    return rows


def _maps(run: ReportRun, geoms: list[Any], n_maps: int) -> dict[str, Any]:
    if n_maps <= 0:
        return {"label": run.label, "maps": [], "note": "maps turned off (--maps 0)"}
    if run.city is None:
        return {"label": run.label, "maps": [], "note": "; ".join(run.notes) or "city not loaded"}
    kind = run.kind
    cands = []
    for r, g in zip(run.rows, geoms):
        spec = kind.map_spec(r, g, run.city)
        if spec is not None:
            cands.append((r, g, spec))
    cands.sort(key=lambda c: (str(c[0]["task_id"]), int(c[0]["seed"])))
    fails = [c for c in cands if not kind.succeeded(c[0])]
    oks = [c for c in cands if kind.succeeded(c[0])]
    picked = []
    while len(picked) < n_maps and (fails or oks):
        for pool in (fails, oks):
            if pool and len(picked) < n_maps:
                picked.append(pool.pop(0))
    maps = []
    for r, g, spec in picked:
        cause = kind.classify(r, g, run.tasks.get(str(r["task_id"])))
        outcome = "success" if cause is None else f"failed ({cause})"
        title = f"{r['task_id']} seed {r['seed']}: {outcome}"
        png = trajectory_map(run.city, spec["path"], goal_xy=spec["goal_xy"], radius_m=spec["radius_m"], title=title,
                             attribution=run.attribution, other_goals_xy=spec["others"], closures=spec["closures"],
                             zones=spec["zones"])
        maps.append({"png": png, "caption": f"{title}{kind.map_caption(r, g)}; {r.get('steps')} steps, ended by "
                     f"{r.get('status') or r.get('stop_reason')}", "attribution": run.attribution})
    note = None if maps else "no episode with a path to draw (position tasks only)"
    return {"label": run.label, "maps": maps, "note": note}


def build_report(runs: list[ReportRun], *, baseline: str | None = None, n_maps: int = 3, n_boot: int = 10000,
                 min_common_tasks: int = 10, seed: int = 0, title: str = "urbanarena report",
                 failure_classifier: Any = None, classifier_max: int = 40) -> dict[str, Any]:
    """The report's content (what the template shows) from loaded runs.

    Args:
        runs: :func:`~urbanarena.report.runs.load_runs`.
        baseline: label of the run every other run of its protocol is tested against (default: the
            first run of each protocol).
        n_maps: trajectory maps per run (0: none).
        n_boot: paired-bootstrap resamples.
        min_common_tasks: fewest common tasks for which a family's test is run (smaller samples get no
            p-value: the bootstrap is anticonservative for very few tasks).
        seed: seed of the paired bootstraps.
        failure_classifier: an optional :class:`~urbanarena.report.failure_llm.FailureClassifier`; its
            labels of up to ``classifier_max`` failed episodes per run are shown next to the rules.
    Raises:
        UrbanArenaError: ``baseline`` names no run; the classifier is a model under test.
    """
    if baseline is not None and baseline not in {r.label for r in runs}:
        raise UrbanArenaError(f"--baseline {baseline!r} names no run; runs: {', '.join(r.label for r in runs)}")
    if failure_classifier is not None:
        from urbanarena.report.failure_llm import check_classifier

        check_classifier(failure_classifier.model_id, [str(r.model) for r in runs if r.model])
    groups: dict[str, list[ReportRun]] = {}
    for r in runs:
        groups.setdefault(f"{r.protocol}|{r.kind.name}", []).append(r)
    sections = []
    attributions = set()
    for group in groups.values():
        kind = group[0].kind
        pid = _slug(group[0].protocol + kind.section_suffix)
        geoms = {r.label: _geoms(r) for r in group}
        sections.append({
            "id": pid, "protocol": group[0].protocol, "kind": kind.name,
            "caption": _caption(group), "tables": kind.tables(group, pid), "chart": _chart(group),
            "chart_group": kind.chart_group_label, "failure_note": kind.failure_note,
            "counters": _counters(group), "failures": _failures(group, geoms, failure_classifier, classifier_max),
            "sensitivity": _sensitivity(group),
            "significance": _significance(group, baseline, n_boot, min_common_tasks, seed),
            "maps": [_maps(r, geoms[r.label], n_maps) for r in group],
            "success_key": kind.success_key,
            "errored": [f"{r.label}: {describe_errors(r.summary)}" for r in group if describe_errors(r.summary)],
            "strategy_table": _strategy_table(group, kind.success_key),
        })
        attributions.update(r.attribution for r in group if r.attribution)
    run_rows = []
    for r in runs:
        s = r.summary
        cv = (r.meta or {}).get("code_version") or {}
        run_rows.append({
            "label": r.label, "run_dir": str(r.run_dir), "agent": r.agent, "model": r.model or "–",
            "protocol": r.protocol, "family": s["family"], "tasks_source": r.task_source, "judge": r.judge or "none",
            "city": r.city_name or "?", "episodes": s["episodes"], "tasks": s["tasks"], "seeds": len(s["seeds"]),
            "complete": {True: "yes", False: f"no ({s['episodes']} of {s['planned']})", None: "?"}[s["complete"]],
            "config": s["config_hash"][:12],
            "code": (f"{urbanarena.__name__} {cv.get('package_version')} {str(cv.get('git_commit') or '')[:10]}"
                     f"{' dirty' if cv.get('git_dirty') else ''}"),
            "notes": r.notes,
            "strategies": r.facts.strategies or "none", "rounds": r.facts.rounds,
            "render_style": r.facts.render_style, "population": r.facts.population,
            "privileged": r.facts.privileged_what(r.agent) or "no",
        })
    return {
        "title": title, "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": urbanarena.__version__, "runs": run_rows, "sections": sections,
        "mixed_protocols": len({r.protocol for r in runs}) > 1,
        "attributions": sorted(attributions), "causes": list(CAUSES), "other_buckets": list(OTHER_BUCKETS),
        "alpha": ALPHA, "n_boot": n_boot, "min_common_tasks": min_common_tasks,
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("urbanarena.report", "templates"), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_html(context: Mapping[str, Any]) -> str:
    """The HTML text of :func:`build_report`'s content (``templates/report.html.j2``, autoescaped)."""
    return _environment().get_template("report.html.j2").render(**context)


def write_html_report(run_dirs: Sequence[str | Path], out: str | Path, *, baseline: str | None = None,
                      n_maps: int = 3, n_resamples: int = 2000, n_boot: int = 10000, min_common_tasks: int = 10,
                      city: str | None = None, title: str = "urbanarena report", seed: int = 0,
                      failure_classifier: Any = None, classifier_max: int = 40) -> Path:
    """Load ``run_dirs``, build the report and write it to ``out`` (one HTML file); returns ``out``.

    Raises:
        StoreError: a RUN_DIR that is missing, holds no store or no episodes.
        UrbanArenaError: a ``baseline`` naming no run, an unwritable ``out`` (as ``OSError``).
    """
    runs = load_runs(list(run_dirs), n_resamples=n_resamples, seed=seed, city=city, load_context=True)
    ctx = build_report(runs, baseline=baseline, n_maps=n_maps, n_boot=n_boot, min_common_tasks=min_common_tasks,
                       seed=seed, title=title, failure_classifier=failure_classifier, classifier_max=classifier_max)
    text = render_html(ctx)
    p = Path(out)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
    from urbanarena.safe_paths import atomic_write

    atomic_write(p, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return p


__all__ = ["ALPHA", "build_report", "render_html", "write_html_report"]
