"""360CityArena results-schema-v3 columns of a stored episode.

Source: 360CityArena ``docs/results_schema.md`` (result schema version 3,
``results.csv``). Every column below is a column of the run store
(:mod:`urbanarena.runner.store`) with the schema's name and meaning; the
run-level ones (``timestamp``, ``run_id``, ``experiment_id``) are added at
export (:func:`urbanarena.runner.export.export_run`, format
``cityarena-csv``).

Episode columns (arena families; ``NULL`` for graph families):
``task_type`` (360CityArena ``TaskType`` enum name of ``extra.task_kind``),
``map_id``, ``landmark``, ``status`` (``ANSWER``, ``STEP_LIMIT``,
``STAGNATION``, ``AWAY_FROM_GOAL``; ``error`` when the agent raised),
``scored_success``, ``is_correct``, ``validation_available``,
``completed_by_answer``, ``evaluation_metric``, ``evaluation_score``,
``act_requests`` (env steps: every consumed model request, parse errors
included), ``final_action`` (the last action's token: ``W``, ``LEFT``,
``ANSWER``, ``PARSE_ERROR`` ...), ``final_position_x`` / ``final_position_z``
(Unity's ground-plane ``x``/``z``; here local ENU metres **x east** and
**y north** of the city origin), ``final_segment_path`` (the directed edge
``u->v`` the agent stood on, or its node), ``user_answer``, ``expected``,
``distance_to_goal`` (metres, location tasks), ``validation_threshold``,
``message``, ``stop_reason_detail``, ``validation_model`` /
``validation_provider`` / ``validation_pretrained`` (the fuzzy-match judge of
``--judge``: its model name and provider; ``validation_pretrained`` stays
empty — the model name the provider reported for the verdict is
``metrics.judge_reported_model``; all three empty when the episode was not
judged).

Model columns (every episode whose agent calls a model, graph VLM agents
included): ``model``, ``provider``, ``pretrained`` (empty: specs pin the
model name), ``max_tokens`` / ``temperature`` (as sent),
``llm_request_count`` (model calls, cache hits included), ``llm_error_count``
(transport faults and rejected requests), ``parse_error_count`` (replies with
no usable JSON: oversized, empty, refusal, truncated, no/invalid JSON),
``invalid_action_count`` (parsed replies with an unusable action — unknown
or missing action, size out of range, empty answer, bad stop/choice value —
plus actions the env rejected), ``request_error_count`` (1 when the episode
ended with an exception, else 0), ``total_prompt_tokens``,
``total_completion_tokens``, ``total_tokens`` (provider-reported usage of API
calls; replies served from the response cache count their original usage),
``total_llm_latency_seconds`` / ``avg_llm_latency_seconds`` (API calls),
``last_finish_reason``, ``last_response_model``, ``last_error_type``,
``last_error_message``. ``elapsed_seconds`` is the episode's wall time and
``artifact_dir`` the trace folder relative to ``RUN_DIR`` (``--trace``).
"""

from __future__ import annotations

from typing import Any, Mapping

#: store columns of the schema, in 360CityArena's order, with their SQLite types
V3_STORE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("task_type", "TEXT"), ("map_id", "TEXT"), ("landmark", "TEXT"),
    ("model", "TEXT"), ("provider", "TEXT"), ("pretrained", "TEXT"),
    ("max_tokens", "INTEGER"), ("temperature", "REAL"),
    ("validation_model", "TEXT"), ("validation_provider", "TEXT"), ("validation_pretrained", "TEXT"),
    ("status", "TEXT"), ("scored_success", "INTEGER"), ("is_correct", "INTEGER"),
    ("validation_available", "INTEGER"), ("completed_by_answer", "INTEGER"),
    ("evaluation_metric", "TEXT"), ("evaluation_score", "REAL"),
    ("act_requests", "INTEGER"), ("elapsed_seconds", "REAL"), ("final_action", "TEXT"),
    ("final_position_x", "REAL"), ("final_position_z", "REAL"), ("final_segment_path", "TEXT"),
    ("user_answer", "TEXT"), ("expected", "TEXT"), ("distance_to_goal", "REAL"),
    ("validation_threshold", "REAL"), ("message", "TEXT"), ("stop_reason_detail", "TEXT"),
    ("llm_request_count", "INTEGER"), ("llm_error_count", "INTEGER"), ("parse_error_count", "INTEGER"),
    ("invalid_action_count", "INTEGER"), ("request_error_count", "INTEGER"),
    ("total_prompt_tokens", "INTEGER"), ("total_completion_tokens", "INTEGER"), ("total_tokens", "INTEGER"),
    ("total_llm_latency_seconds", "REAL"), ("avg_llm_latency_seconds", "REAL"),
    ("last_finish_reason", "TEXT"), ("last_response_model", "TEXT"),
    ("last_error_type", "TEXT"), ("last_error_message", "TEXT"), ("artifact_dir", "TEXT"),
)
V3_STORE_NAMES: tuple[str, ...] = tuple(c for c, _ in V3_STORE_COLUMNS)

#: the ``results.csv`` header of results schema v3, in order
CITYARENA_CSV_COLUMNS: tuple[str, ...] = (
    "timestamp", "run_id", "experiment_id", "task_id", "task_type", "difficulty", "map_id", "landmark",
    "model", "provider", "pretrained", "max_tokens", "temperature",
    "validation_model", "validation_provider", "validation_pretrained",
    "status", "scored_success", "is_correct", "validation_available", "completed_by_answer",
    "evaluation_metric", "evaluation_score", "steps", "act_requests", "elapsed_seconds", "final_action",
    "final_position_x", "final_position_z", "final_segment_path", "user_answer", "expected",
    "distance_to_goal", "validation_threshold", "message", "stop_reason_detail",
    "llm_request_count", "llm_error_count", "parse_error_count", "invalid_action_count", "request_error_count",
    "total_prompt_tokens", "total_completion_tokens", "total_tokens",
    "total_llm_latency_seconds", "avg_llm_latency_seconds",
    "last_finish_reason", "last_response_model", "last_error_type", "last_error_message", "artifact_dir",
)
#: columns whose values differ between two runs of the same episode (wall clock)
V3_TIME_COLUMNS = ("elapsed_seconds", "total_llm_latency_seconds", "avg_llm_latency_seconds")

#: parse-error types that are a reply without usable JSON (``parse_error_count``); the others
#: (unknown/missing action, size out of range, empty answer, bad stop/choice ...) are invalid actions
NO_JSON_PARSE_ERRORS = frozenset({"oversized", "empty", "refusal", "truncated", "no_json", "json_invalid"})


def _int(v: Any) -> int:
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


def _split_model(spec: Any) -> tuple[str | None, str | None]:
    """``"provider:model"`` -> (provider, model); a bare name -> (None, name)."""
    if not spec:
        return None, None
    s = str(spec)
    provider, sep, model = s.partition(":")
    return (provider, model) if sep else (None, s)


def llm_columns(stats: Mapping[str, Any], *, env_invalid_actions: int = 0, errored: bool = False) -> dict[str, Any]:
    """Model columns (module docstring) from an agent's ``stats`` (``{}`` -> all ``None``
    except ``request_error_count``)."""
    out: dict[str, Any] = {c: None for c in (
        "model", "provider", "pretrained", "max_tokens", "temperature", "llm_request_count", "llm_error_count",
        "parse_error_count", "invalid_action_count", "total_prompt_tokens", "total_completion_tokens",
        "total_tokens", "total_llm_latency_seconds", "avg_llm_latency_seconds", "last_finish_reason",
        "last_response_model", "last_error_type", "last_error_message")}
    out["request_error_count"] = int(bool(errored))
    if not stats or "requests" not in stats:
        if env_invalid_actions:
            out["invalid_action_count"] = int(env_invalid_actions)
        return out
    provider, model = _split_model(stats.get("model"))
    gen = stats.get("generation") or {}
    parse_errors = stats.get("parse_errors") or {}
    no_json = sum(_int(v) for k, v in parse_errors.items() if k in NO_JSON_PARSE_ERRORS)
    bad_action = sum(_int(v) for k, v in parse_errors.items() if k not in NO_JSON_PARSE_ERRORS)
    tin = _int(stats.get("input_tokens")) + _int(stats.get("cached_input_tokens"))
    tout = _int(stats.get("output_tokens")) + _int(stats.get("cached_output_tokens"))
    latency = float(stats.get("latency_s") or 0.0)
    api = _int(stats.get("api_requests"))
    out.update(
        model=model, provider=provider, pretrained="",
        max_tokens=gen.get("max_output_tokens"), temperature=gen.get("temperature"),
        llm_request_count=_int(stats.get("requests")),
        llm_error_count=_int(stats.get("faults_total")) + _int(stats.get("rejected")),
        parse_error_count=no_json,
        invalid_action_count=bad_action + int(env_invalid_actions),
        total_prompt_tokens=tin, total_completion_tokens=tout, total_tokens=tin + tout,
        total_llm_latency_seconds=latency, avg_llm_latency_seconds=(latency / api) if api else 0.0,
        last_finish_reason=stats.get("last_finish_reason"), last_response_model=stats.get("last_response_model"),
        last_error_type=stats.get("last_error_type"), last_error_message=stats.get("last_error_message"),
    )
    return out


def final_action_token(labels: list[str]) -> str | None:
    """The token of the last action label (``"W LARGE"`` -> ``W``, ``"ANSWER: x:1"`` -> ``ANSWER``)."""
    if not labels:
        return None
    return str(labels[-1]).split(":", 1)[0].split(" ", 1)[0]


def segment_path(pose: Mapping[str, Any] | None) -> str | None:
    """``u->v`` for a pose on an edge, the node id on a node, ``None`` without a pose."""
    if not pose:
        return None
    edge = pose.get("edge")
    if edge and pose.get("node") is None:
        return f"{edge[0]}->{edge[1]}"
    return str(pose.get("node") if pose.get("node") is not None else pose.get("nearest_node"))


def arena_columns(result: Mapping[str, Any], *, task_type: str | None, map_id: Any, landmark: Any,
                  final_pose: Mapping[str, Any] | None) -> dict[str, Any]:
    """All :data:`V3_STORE_NAMES` of an arena episode from :func:`run_arena_episode`'s result."""
    stats = result.get("agent_stats") or {}
    counters = result.get("env_counters") or {}
    cols = llm_columns(stats, env_invalid_actions=_int(counters.get("invalid_actions")),
                       errored=result.get("stop_reason") == "error")
    jprov, jmodel = _split_model(result.get("judge_model"))
    fp = result.get("final_position") or {}

    def b(v):
        return None if v is None else int(bool(v))

    cols.update(
        task_type=task_type, map_id=None if map_id is None else str(map_id),
        landmark=None if landmark is None else str(landmark),
        validation_model=jmodel, validation_provider=jprov, validation_pretrained=result.get("judge_model_version"),
        status=result.get("status") or result.get("stop_reason"),
        scored_success=b(result.get("scored_success")), is_correct=b(result.get("is_correct")),
        validation_available=b(result.get("validation_available")),
        completed_by_answer=b(result.get("completed_by_answer")),
        evaluation_metric=result.get("evaluation_metric") or None,
        evaluation_score=result.get("evaluation_score"),
        act_requests=_int(counters.get("steps", result.get("steps"))),
        elapsed_seconds=(result.get("timings") or {}).get("total_s"),
        final_action=final_action_token(list(result.get("actions") or [])),
        final_position_x=fp.get("x_m"), final_position_z=fp.get("y_m"),
        final_segment_path=segment_path(final_pose),
        user_answer=result.get("user_answer") if result.get("user_answer") not in (None, "") else result.get("answer"),
        expected=result.get("expected"),
        distance_to_goal=result.get("distance_to_goal"),
        validation_threshold=result.get("validation_threshold"),
        message=result.get("message"),
        stop_reason_detail=None if result.get("stop_reason_detail") is None else str(result.get("stop_reason_detail")),
        artifact_dir=None,
    )
    return cols


def graph_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    """:data:`V3_STORE_NAMES` of a graph episode: the model columns (arena ones ``None``)."""
    cols = {c: None for c in V3_STORE_NAMES}
    cols.update(llm_columns(result.get("agent_stats") or {}, env_invalid_actions=0,
                            errored=result.get("stop_reason") == "error"))
    if cols.get("llm_request_count") is None:
        cols["request_error_count"] = None  # not a model agent: leave every schema column empty
    else:
        cols["elapsed_seconds"] = (result.get("timings") or {}).get("total_s")
    return cols


__all__ = ["CITYARENA_CSV_COLUMNS", "NO_JSON_PARSE_ERRORS", "V3_STORE_COLUMNS", "V3_STORE_NAMES", "V3_TIME_COLUMNS",
           "arena_columns", "final_action_token", "graph_columns", "llm_columns", "segment_path"]
