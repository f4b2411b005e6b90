"""The static HTML report of one or several stored runs (``urbanarena report RUN_DIR ... --out FILE``).

One self-contained file (figures are inline base64 PNGs; no scripts, no external resources), rendered
from ``templates/report.html.j2`` by jinja2 with autoescaping on, so every stored string (agent names,
answers, task ids, paths) is escaped.

Layout: a table of every run (config) read; then one section per **protocol** — runs of different
protocols are never put in one score table; the runs table, which does mix them, says so. A section
holds, each table captioned with the protocol id, every run's task source (``run.json`` ``tasks.spec``,
frozen-suite name, source hash) and the judge model:

* scores with 95 % cluster-bootstrap CIs (:func:`urbanarena.runner.summary.summarize_run`): arena runs
  per family (evaluation score x100) and overall; graph runs their navigation metrics;
* per difficulty (and per category for graph runs) the success measure (arena: evaluation score; graph:
  :func:`~urbanarena.report.episodes.graph_success_key`) with CIs, and a success-by-difficulty chart;
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
from urbanarena.report.arena_report import FAMILY_ORDER
from urbanarena.report.charts import difficulty_chart, order_difficulties, trajectory_map
from urbanarena.report.episodes import counters, geometry, succeeded
from urbanarena.report.failures import CAUSES, OTHER_BUCKETS, breakdown, classify
from urbanarena.report.runs import ReportRun, load_runs
from urbanarena.report.sensitivity import SCALES, mean_at_scale, sensitivity
from urbanarena.report.significance import holm
from urbanarena.tasks.metrics.paired import paired_bootstrap, per_task_scores

#: graph metric keys shown in the overall table, in order (those with a value in some run)
GRAPH_KEYS = ("tc_exact", "tc_proximity_50m", "tc_category", "tc", "spl", "ndtw", "sdtw", "sed", "goal_dist_m",
              "spd_m", "spd_hops", "avg_steps")
LABELS = {
    "tc_exact": "TC-E %", "tc_proximity_50m": "TC-P50 %", "tc_category": "TC-C %", "tc": "TC %", "spl": "SPL %",
    "ndtw": "nDTW %", "sdtw": "SDTW %", "sed": "SED %", "goal_dist_m": "goal distance m", "spd_m": "SPD m",
    "spd_hops": "SPD hops", "avg_steps": "steps", "evaluation_score": "evaluation score",
}
#: significance level of the Holm-corrected tests
ALPHA = 0.05


def _num(v: Any) -> str:
    """Full-precision text of a number for ``data-*`` attributes ('' for None)."""
    return "" if v is None else repr(float(v))


def _cell(mean: float | None, ci: Sequence[float] | None, n: int | None = None) -> dict[str, Any]:
    if mean is None:
        text = "–"
    elif ci:
        text = f"{mean:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]"
    else:
        text = f"{mean:.1f}"
    return {"text": text, "mean": _num(mean), "lo": _num(ci[0]) if ci else "", "hi": _num(ci[1]) if ci else "",
            "n": "" if n is None else str(n)}


def _slug(s: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in s).strip("-").lower() or "x"


def _arena_kind(row: Mapping[str, Any]) -> str | None:
    d = row.get("details")
    if isinstance(d, Mapping) and d.get("task_kind"):
        return str(d["task_kind"])
    from urbanarena.tasks.families.cityarena import TASK_KINDS

    return {tt: k for k, (tt, _) in TASK_KINDS.items()}.get(str(row.get("task_type")))


def _score_rows(run: ReportRun) -> list[dict[str, Any]]:
    """Rows with ``score`` (arena evaluation score, missing 0; graph success key) and ``fam``."""
    out = []
    for r in run.rows:
        if run.arena:
            score = 0.0 if r.get("evaluation_score") is None else float(r["evaluation_score"])
            fam = _arena_kind(r)
        else:
            v = r.get(run.success_key)
            score = None if v is None else float(v)
            fam = str(r.get("family"))
        out.append({"task_id": str(r["task_id"]), "task_hash": r.get("task_hash"), "score": score, "fam": fam})
    return out


def _caption(group: list[ReportRun]) -> dict[str, Any]:
    sources = {r.label: r.task_source for r in group}
    judges = sorted({r.judge or "none" for r in group})
    return {"protocol": group[0].protocol, "sources": sources, "judge": ", ".join(judges),
            "mixed_sources": len(set(sources.values())) > 1, "mixed_judges": len(judges) > 1}


def _tables(group: list[ReportRun], pid: str) -> list[dict[str, Any]]:
    labels = [r.label for r in group]
    tables = []
    if group[0].arena:
        fams = [f for f in FAMILY_ORDER if any(f in (r.summary.get("by_family") or {}) for r in group)]
        fams += sorted({f for r in group for f in (r.summary.get("by_family") or {})} - set(fams))
        rows = []
        for f in fams:
            cells = []
            for r in group:
                g = (r.summary.get("by_family") or {}).get(f)
                cells.append(_cell(g["mean"], g["ci95"], g["tasks"]) if g else _cell(None, None))
            rows.append({"name": f, "key": f, "cells": cells, "total": False})
        rows.append({"name": "overall", "key": "overall", "cells": [
            _cell(r.summary["metrics"].get("evaluation_score"), r.summary["ci95"].get("evaluation_score"),
                  r.summary["tasks"]) for r in group], "total": True})
        tables.append({"id": f"{pid}-family", "title": "Evaluation score x100 per family (95 % CI; n = tasks)",
                       "labels": labels, "rows": rows, "key": "evaluation_score"})
        key = "evaluation_score"
    else:
        fams = sorted({str(r.summary["family"]) for r in group})
        keys = [k for k in GRAPH_KEYS if any(r.summary["metrics"].get(k) is not None for r in group)]
        rows = [{"name": LABELS.get(k, k), "key": k, "total": False, "cells": [
            _cell(r.summary["metrics"].get(k), r.summary["ci95"].get(k), r.summary["counts"].get(k)
                  if r.summary.get("counts") else None) for r in group]} for k in keys]
        tables.append({"id": f"{pid}-family", "title": f"Family {', '.join(fams)}: metrics over all episodes "
                       "(rates in %, 95 % CI; n = episodes with a value)", "labels": labels, "rows": rows,
                       "key": None})
        key = group[0].success_key or "tc_proximity_50m"
    for grp, title in (("by_difficulty", "per difficulty"), ("by_category", "per category")):
        if group[0].arena and grp == "by_category":
            continue
        names = sorted({g for r in group for g in r.summary[grp]})
        if grp == "by_difficulty":
            names = order_difficulties(names)
        if not names:
            continue
        rows = []
        for name in names:
            cells = []
            for r in group:
                g = r.summary[grp].get(name)
                cells.append(_cell(g["metrics"].get(key), g["ci95"].get(key), g["episodes"]) if g
                             else _cell(None, None))
            rows.append({"name": name, "key": name, "cells": cells, "total": False})
        tables.append({"id": f"{pid}-{grp.replace('_', '-')}", "title": f"{LABELS.get(key, key)} {title} "
                       "(95 % CI; n = episodes)", "labels": labels, "rows": rows, "key": key})
    return tables


def _chart(group: list[ReportRun]) -> str | None:
    key = "evaluation_score" if group[0].arena else (group[0].success_key or "tc_proximity_50m")
    values = {r.label: {d: (g["metrics"].get(key), g["ci95"].get(key)) for d, g in r.summary["by_difficulty"].items()}
              for r in group}
    if not any(values.values()):
        return None
    return difficulty_chart(values, ylabel=f"{LABELS.get(key, key)}", title=f"{group[0].protocol}: "
                            f"{LABELS.get(key, key)} by difficulty (95 % CI)")


def _geoms(run: ReportRun) -> list[Any]:
    return [geometry(r, run.city, run.tasks.get(str(r["task_id"]))) for r in run.rows]


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
            "invalid_actions": tot("invalid_actions"), "blocked_moves": tot("blocked_moves") if run.arena else None,
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
        causes = [classify(r, g, run.success_key) for r, g in zip(run.rows, geoms[run.label])]
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
        radius_of = {t: float(task.success_radius_m) for t, task in run.tasks.items()
                     if task.success_radius_m is not None}
        vals = {s: mean_at_scale(run.rows, s, radius_of) for s in SCALES}
        if any(v is None for v in vals.values()):
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
        fams = [f for f in FAMILY_ORDER if any(x["fam"] == f for x in bs)] if base.arena else []
        fams += sorted({x["fam"] for x in bs if x["fam"] is not None} - set(fams))
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


def _maps(run: ReportRun, geoms: list[Any], n_maps: int) -> dict[str, Any]:
    if n_maps <= 0:
        return {"label": run.label, "maps": [], "note": "maps turned off (--maps 0)"}
    if run.city is None:
        return {"label": run.label, "maps": [], "note": "; ".join(run.notes) or "city not loaded"}
    cands = []
    for r, g in zip(run.rows, geoms):
        if g is not None:
            cands.append((r, g))
        elif not run.arena and isinstance(r.get("trajectory"), list) and r["trajectory"] and all(
                n in run.city for n in r["trajectory"]):
            cands.append((r, None))
    cands.sort(key=lambda rg: (str(rg[0]["task_id"]), int(rg[0]["seed"])))
    fails = [c for c in cands if not succeeded(c[0], run.success_key)]
    oks = [c for c in cands if succeeded(c[0], run.success_key)]
    picked = []
    while len(picked) < n_maps and (fails or oks):
        for pool in (fails, oks):
            if pool and len(picked) < n_maps:
                picked.append(pool.pop(0))
    maps = []
    for r, g in picked:
        path = list(g.path_xy) if g is not None else [run.city.xy(n) for n in r["trajectory"]]
        cause = classify(r, g, run.success_key)
        outcome = "success" if cause is None else f"failed ({cause})"
        dist = f", final distance {g.final_distance_m:.0f} m (radius {g.radius_m:.0f} m)" if g else ""
        title = f"{r['task_id']} seed {r['seed']}: {outcome}"
        png = trajectory_map(run.city, path, goal_xy=g.goal_xy if g else None, radius_m=g.radius_m if g else None,
                             title=title, attribution=run.attribution)
        maps.append({"png": png, "caption": f"{title}{dist}; {r.get('steps')} steps, ended by "
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
        groups.setdefault(f"{r.protocol}|{'arena' if r.arena else 'graph'}", []).append(r)
    sections = []
    attributions = set()
    for group in groups.values():
        pid = _slug(group[0].protocol + ("" if group[0].arena else "-graph"))
        geoms = {r.label: _geoms(r) for r in group}
        sections.append({
            "id": pid, "protocol": group[0].protocol, "kind": "arena" if group[0].arena else "graph",
            "caption": _caption(group), "tables": _tables(group, pid), "chart": _chart(group),
            "counters": _counters(group), "failures": _failures(group, geoms, failure_classifier, classifier_max),
            "sensitivity": _sensitivity(group),
            "significance": _significance(group, baseline, n_boot, min_common_tasks, seed),
            "maps": [_maps(r, geoms[r.label], n_maps) for r in group],
            "success_key": "evaluation_score" if group[0].arena else group[0].success_key,
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
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(p)
    return p


__all__ = ["ALPHA", "build_report", "render_html", "write_html_report"]
