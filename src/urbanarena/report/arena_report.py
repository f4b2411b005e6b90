"""Per-family comparison report of arena runs (several agents on one suite), as Markdown and JSON.

Input: run summaries (:func:`urbanarena.runner.summary.summarize_run` of arena
configs: ``metrics.evaluation_score``, ``by_family``, ``mdd``). Output:

* ``report.md`` — one table, rows the seven families and ``overall``,
  columns the agents, cells ``mean [ci95 low, high]`` of the evaluation score
  (x100; missing scores count 0), then the minimum detectable difference at
  each suite size, the protocol id, suite name and any render-check warning,
  the OpenStreetMap attribution and the comparability note;
* ``report.json`` — the same numbers, machine-readable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from urbanarena.runner.summary import describe_errors

#: family order of the table (360CityArena's seven families under our names)
FAMILY_ORDER = ("localization", "landmark_language", "landmark_image", "map_navigation", "vln", "object_count",
                "relational")
OSM_NOTE = "Map data and renders: © OpenStreetMap contributors (ODbL 1.0)."
COMPARABILITY_NOTE = ("These are urbanarena's 360CityArena-style families on a rendered OpenStreetMap city; the scores "
                      "are not comparable with the 360CityArena paper's Akihabara numbers.")


def _cell(mean: float | None, ci: list[float] | None) -> str:
    if mean is None:
        return "–"
    if not ci:
        return f"{mean:.1f}"
    return f"{mean:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]"


def report_data(summaries: Mapping[str, Mapping[str, Any]], *, suite: str | None = None,
                suite_check: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report's numbers: per agent ``overall`` {mean, ci95, tasks, episodes} and ``by_family``
    {family: {mean, ci95, tasks}}, plus ``protocols`` (agent -> protocol id), ``mdd``, ``suite``,
    ``suite_check``."""
    agents: dict[str, Any] = {}
    mdd = None
    for agent, s in summaries.items():
        fams = s.get("by_family") or {}
        agents[agent] = {
            "protocol": s.get("protocol"),
            "overall": {"mean": s["metrics"].get("evaluation_score"), "ci95": (s.get("ci95") or {}).get(
                "evaluation_score"), "tasks": s.get("tasks"), "episodes": s.get("episodes")},
            "by_family": {k: {"mean": f["mean"], "ci95": f["ci95"], "tasks": f["tasks"]} for k, f in fams.items()},
            "errors": s.get("errors"), "missing_scores": s.get("missing_scores"),
            "errors_line": describe_errors(s),
        }
        mdd = mdd or s.get("mdd")
    return {"suite": suite, "suite_check": dict(suite_check) if suite_check else None, "agents": agents, "mdd": mdd,
            "attribution": OSM_NOTE, "note": COMPARABILITY_NOTE}


def render_markdown(data: Mapping[str, Any], title: str = "urbanarena arena report") -> str:
    """Markdown text of :func:`report_data`."""
    agents = list(data["agents"])
    fams = [f for f in FAMILY_ORDER if any(f in a["by_family"] for a in data["agents"].values())]
    fams += sorted({f for a in data["agents"].values() for f in a["by_family"]} - set(fams))
    lines = [f"# {title}", ""]
    if data.get("suite"):
        lines.append(f"Suite: `{data['suite']}`. Score: mean evaluation score x100 with 95 % cluster-bootstrap CIs "
                     "over tasks (an unvalidated answer counts 0).")
    protos = {a: d["protocol"] for a, d in data["agents"].items()}
    lines.append("Protocols: " + ", ".join(f"{a} `{p}`" for a, p in protos.items()) + ".")
    for a, d in data["agents"].items():
        if d.get("errors_line"):
            lines += ["", f"**{a}** {d['errors_line']}."]
    lines += ["", "| family | " + " | ".join(agents) + " |", "|---|" + "---|" * len(agents)]
    for f in fams:
        row = [_cell((data["agents"][a]["by_family"].get(f) or {}).get("mean"),
                     (data["agents"][a]["by_family"].get(f) or {}).get("ci95")) for a in agents]
        n = max(((data["agents"][a]["by_family"].get(f) or {}).get("tasks") or 0) for a in agents)
        lines.append(f"| {f} ({n}) | " + " | ".join(row) + " |")
    lines.append("| **overall** | " + " | ".join(
        _cell(data["agents"][a]["overall"]["mean"], data["agents"][a]["overall"]["ci95"]) for a in agents) + " |")
    mdd = data.get("mdd")
    if mdd:
        sizes = "; ".join(f"{k} ({v['tasks_per_family']} per family): {v['per_family']:.1f} points per family, "
                          f"{v['overall']:.1f} overall" for k, v in mdd["sizes"].items())
        lines += ["", f"Minimum detectable difference between two agents (alpha {mdd['alpha']}, power {mdd['power']}, "
                      f"worst-case sd {mdd['sd']}, unpaired): {sizes}. Differences smaller than these are not "
                      "evidence at that size."]
    chk = data.get("suite_check")
    if chk:
        if chk.get("matches", True):
            within = len(chk.get("assets_within_tolerance") or []), len(chk.get("panoramas_within_tolerance") or [])
            tol = (f"; {within[0]} images and {within[1]} panoramas of them drawn within tolerance, not bit-identical: "
                   "every block mean within "
                   f"{(chk.get('tolerance') or {}).get('max_block_diff_grey')} grey levels" if any(within) else "")
            lines += ["", f"Render check: this machine's images and fingerprint panoramas match the frozen suite "
                          f"({chk.get('assets_checked', 0)} images, {chk.get('panoramas_checked', 0)} panoramas{tol})."]
        else:
            lines += ["", f"**Render check failed**: {len(chk.get('assets_differ') or [])} images and "
                          f"{len(chk.get('panoramas_differ') or [])} fingerprint panoramas differ from the frozen "
                          "suite's; these scores are not comparable with runs on the frozen renderer."]
    lines += ["", data.get("note") or COMPARABILITY_NOTE, "", data.get("attribution") or OSM_NOTE, ""]
    return "\n".join(lines)


def write_report(summaries: Mapping[str, Mapping[str, Any]], out_dir: str | Path, *, suite: str | None = None,
                 suite_check: Mapping[str, Any] | None = None, title: str = "urbanarena arena report",
                 ) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.json`` into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = report_data(summaries, suite=suite, suite_check=suite_check)
    md = out / "report.md"
    md.write_text(render_markdown(data, title), encoding="utf-8")
    js = out / "report.json"
    js.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return md, js


__all__ = ["COMPARABILITY_NOTE", "FAMILY_ORDER", "OSM_NOTE", "render_markdown", "report_data", "write_report"]
