"""The score of an episode that ended in an agent or environment error (stop reason ``error``).

Such an episode is a failure in every score, so a model that errors more can never score higher
(ours; the seed papers do not say). Its success and quality metrics are set to their failure
value: rates and scores to 0 (``tc_*``, ``spl``, ``ndtw``/``sdtw``, ``sed``, ``sr``, ``pna``,
``closure_respected``, ``on_time_ratio``, ``route_efficiency``, ``answer_correct``, arena
``evaluation_score``), arena ``scored_success``/``is_correct`` to false. Distances, step counts
and rates where lower is better (``goal_dist_m``, ``final_distance_m``, ``rdr``, ``pcr`` ...)
keep the values measured where the episode stopped. Without this an error at the start of a
short route scored ``spl`` 1.0 and ``tc_proximity_50m`` 1.0.
"""

from __future__ import annotations

from typing import Any, Mapping

#: metrics set to 0.0 in an errored episode (where the scorer returned a value)
ZEROED: frozenset[str] = frozenset({
    "tc_exact", "tc_proximity_40m", "tc_proximity_50m", "tc_proximity_60m", "tc_category", "tc", "spl", "ndtw",
    "sdtw", "sed", "sr", "pna", "closure_respected", "on_time_ratio", "route_efficiency", "answer_correct",
    "evaluation_score", "offline_score", "oracle_sr",
})
#: metrics set to False in an errored episode
FALSIFIED: frozenset[str] = frozenset({"scored_success", "is_correct"})


def as_failure(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` of an errored episode with every success/quality value at its failure value
    (module docstring); keys the scorer did not return, or returned as ``None`` (the metric does not
    apply, or an arena answer was never validated), stay as they are."""
    out = dict(metrics)
    for k, v in metrics.items():
        if k in ZEROED and v is not None:
            out[k] = 0.0
        elif k in FALSIFIED and v is not None:
            out[k] = False
    return out


__all__ = ["FALSIFIED", "ZEROED", "as_failure"]
