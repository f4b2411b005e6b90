"""What a stored config was, read back from its config and ``run.json``: strategies, rounds, render style,
population and whether it used privileged information.

One reading shared by ``urbanarena summary`` (its privileged note) and the HTML report (the runs table, the
per-strategy table), so the two never disagree about a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbanarena.runner.metadata import read_run_json
from urbanarena.runner.summary import render_style_of


@dataclass(frozen=True)
class RunFacts:
    """Facts of one config.

    Attributes:
        strategies: the canonical ``--strategy`` spec (e.g. ``"B2,C1,R3"``), ``""`` without strategies.
        privileged_strategies: ids of the composed strategies flagged privileged.
        privileged_agent: the agent itself plans on ground truth (its registered class is ``privileged``, or
            ``run.json`` records ``privileged`` for an invocation whose strategies were not privileged).
        rounds: ``--rounds`` (1 when not recorded).
        render_style: the style the views were drawn in (:func:`~urbanarena.runner.summary.render_style_of`).
        population: the population setting of the views (``"none"`` when not recorded).
    """

    strategies: str = ""
    privileged_strategies: list[str] = field(default_factory=list)
    privileged_agent: bool = False
    rounds: int = 1
    render_style: str = "flat"
    population: str = "none"

    @property
    def privileged(self) -> bool:
        return self.privileged_agent or bool(self.privileged_strategies)

    def privileged_what(self, agent: str) -> str:
        """``"agent X and strategies B2"``-style text, ``""`` when nothing privileged."""
        return " and ".join(([f"agent {agent}"] if self.privileged_agent else [])
                            + ([f"strategies {', '.join(self.privileged_strategies)}"]
                               if self.privileged_strategies else []))


def _agent_class_privileged(agent: str) -> bool:
    # the registry lives in the agents layer, below the runner: a lazy import keeps module import light
    from urbanarena.agents.registry import AGENTS

    return bool(getattr(AGENTS.get(agent), "privileged", False))


def run_facts(summary: dict[str, Any], run_dir: str | Path | None = None,
              meta: dict[str, Any] | None = None) -> RunFacts:
    """The :class:`RunFacts` of a summarised config.

    Args:
        summary: :func:`urbanarena.runner.summary.summarize_run`'s dict (needs ``config``, ``config_hash``,
            ``agent``).
        run_dir: its RUN_DIR, to read ``run.json`` when ``meta`` is not given.
        meta: ``run.json`` already read (or ``None``).
    """
    cfg = summary.get("config") or {}
    strat = cfg.get("strategies") or {}
    items = strat.get("items") or []
    privileged_strategies = [str(i.get("id")) for i in items if i.get("privileged")]
    agent = str(summary.get("agent"))
    privileged_agent = _agent_class_privileged(agent)
    if meta is None and run_dir is not None:
        meta = read_run_json(Path(run_dir))
    for rec in ([meta] + list(reversed(meta.get("history") or []))) if meta else []:
        configs = rec.get("configs") or {}
        if summary.get("config_hash") in configs:
            if rec.get("privileged") and not any((c or {}).get("strategies", {}) and c["strategies"].get("privileged")
                                                 for c in configs.values()):
                privileged_agent = True
            break
    extra = cfg.get("extra") or {}
    population = (extra.get("arena_view") or {}).get("population") or extra.get("population") or "none"
    return RunFacts(strategies=str(strat.get("spec") or ""), privileged_strategies=privileged_strategies,
                    privileged_agent=privileged_agent, rounds=int(cfg.get("rounds") or 1),
                    render_style=render_style_of(cfg), population=str(population))


__all__ = ["RunFacts", "run_facts"]
