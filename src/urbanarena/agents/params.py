"""The parameter schema of every registered agent and of the model client (``-p KEY=VALUE``).

One pydantic model per agent (:data:`AGENT_PARAMS`, keyed by registry name) lists every parameter with its
type, default, range and meaning; :func:`validate_agent_params` checks a run's ``-p`` values against it in
the preflight (:func:`urbanarena.runner.driver.prepare`), before ``RUN_DIR`` exists, so a value out of range
is refused naming the key, the value and the range instead of turning every episode into an agent error.
``urbanarena agents NAME`` prints the schema (:func:`params_table`); ``docs/vlm-agents.md`` shows the VLM ones.

Every model forbids unknown keys and non-finite numbers (``1e309`` is JSON for infinity). The VLM agents
share :class:`ClientParams` (what configures the model client: timeout, retries, generation, images, cache,
budget, key variable) and :class:`ModelAgentParams`. Ranges the agents' own constructors do not state are
ours, chosen to refuse values that cannot be meant (a timeout of 0 s, a retry count of 10**9), and say so in
the description. Agents given as ``module:Callable`` have no schema here (their constructor checks them).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from urbanarena.agents.clients import GenerationSettings, ImageSettings, RetryPolicy
from urbanarena.errors import UrbanArenaError
from urbanarena.redact import redact_urls

#: longest per-request timeout accepted, seconds (ours)
MAX_TIMEOUT_S = 3600.0
#: shortest per-request timeout accepted, seconds (ours: below it no provider answers)
MIN_TIMEOUT_S = 0.1
#: most retries of one model call (ours)
MAX_RETRIES = 20
#: longest wait between retries, seconds (ours)
MAX_BACKOFF_S = 3600.0


class AgentParamError(UrbanArenaError, ValueError):
    """A ``-p`` value outside its agent's schema (the message names the agent, the key, the value and the range)."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)


class ForwardParams(_Params):
    """Always the first offered choice (CitySeeker's forward baseline); no parameter."""


class StraightParams(_Params):
    """Keeps going straight (the choice nearest the travel direction); no parameter."""


# ------------------------------------------------------------------ baselines
class RandomParams(_Params):
    """A uniformly random offered choice each step (seeded by the episode seed)."""

    stop_prob: float = Field(0.0, ge=0.0, le=1.0, description="probability of STOP at each step")


class ArenaStraightParams(_Params):
    """Walks straight ahead on arena tasks and answers at a fixed step (the `straight` baseline there)."""

    answer_at_step: int = Field(50, ge=1, le=10**6, description="step at which it answers 'here'")


class BCParams(_Params):
    """A behaviour-cloning policy (`--agent bc:CHECKPOINT`, the `train` extra)."""

    checkpoint: str = Field(..., min_length=1, description="safetensors file written by `urbanarena train bc`")


class OracleParams(_Params):
    """Privileged: follows a path to the goal on the protocol's own action rule."""

    follow: Literal["auto", "shortest", "reference"] = Field(
        "auto", description="path to follow: the task's reference path where legal (auto), the shortest, or the reference")


class ArenaOracleParams(_Params):
    """Privileged: plans arena moves to the goal."""

    margin_m: float = Field(0.5, ge=0.0, le=1000.0, description="metres kept inside the success radius")


class ArenaRandomParams(_Params):
    """Random arena moves and answers."""

    answer_prob: float = Field(1 / 30, ge=0.0, le=1.0, description="per-step probability of answering 'here'")
    max_count: int = Field(15, ge=0, le=10**6, description="largest count guessed on counting tasks")
    walk_prob: float = Field(0.9, ge=0.0, le=1.0, description="probability of walking (else turning) per step")


class UrbanGroundOracleParams(_Params):
    """Privileged: plans a collision-free path on walkable space."""

    clearance_m: float = Field(0.1, ge=0.0, le=100.0, description="metres kept from obstacles")
    pedestrian_margin_m: float = Field(1.0, ge=0.0, le=100.0, description="metres kept from pedestrians")


class UrbanGroundRandomParams(_Params):
    """Random continuous moves."""

    terminate_prob: float = Field(1 / 150, ge=0.0, le=1.0, description="per-step probability of terminate")


class UrbanGroundStraightParams(_Params):
    """Forward 2 s every step, a 90-degree look after a blocked move; no parameters."""


class OcrParams(_Params):
    """Reads signs with rapidocr and walks to the named landmark (the 'ocr' extra)."""

    hfov_deg: float = Field(90.0, gt=0.0, lt=180.0, description="horizontal field of view of the views read, degrees")
    sign_height_m: float = Field(3.44, gt=0.0, le=1000.0, description="assumed height of a sign's text centre, metres")
    eye_height_m: float = Field(1.7, gt=0.0, le=1000.0, description="camera height, metres (below sign_height_m)")
    text_box_height_m: float = Field(0.9, gt=0.0, le=100.0, description="assumed height of a text box, metres")
    stop_along_m: float = Field(4.0, gt=0.0, le=10_000.0, description="answer once this close along the street, metres")
    max_front_m: float = Field(25.0, gt=0.0, le=10_000.0, description="farthest sign distance trusted, metres")
    max_scans: int = Field(0, ge=0, le=10_000, description="extra look-around scans while exploring")
    scan_spacing_m: float = Field(30.0, ge=0.0, le=10_000.0, description="metres walked between scans")
    explore_radius_m: float = Field(80.0, gt=0.0, le=100_000.0, description="exploration radius, metres")
    det_limit_side_len: int = Field(640, ge=32, le=8192, description="OCR detector's longest image side, pixels")
    answer_prob: float = Field(1 / 30, ge=0.0, le=1.0, description="as arena-random, when no sign is read")
    max_count: int = Field(15, ge=0, le=10**6, description="as arena-random")
    walk_prob: float = Field(0.9, ge=0.0, le=1.0, description="as arena-random")


# ------------------------------------------------------------------ model client
class RetryParams(RetryPolicy):
    """:class:`~urbanarena.agents.clients.RetryPolicy` with upper bounds (ours) and finite numbers only."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_retries: int = Field(default=6, ge=0, le=MAX_RETRIES)
    backoff_initial_s: float = Field(default=1.0, ge=0.0, le=MAX_BACKOFF_S)
    backoff_factor: float = Field(default=2.0, ge=1.0, le=100.0)
    backoff_max_s: float = Field(default=60.0, ge=0.0, le=MAX_BACKOFF_S)
    retry_after_max_s: float = Field(default=300.0, ge=0.0, le=MAX_BACKOFF_S)


class GenerationParams(GenerationSettings):
    """:class:`~urbanarena.agents.clients.GenerationSettings`, finite numbers only, 64-bit seed."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_output_tokens: int = Field(default=1024, gt=0, le=10**7)
    thinking_budget_tokens: int | None = Field(default=None, gt=0, le=10**7)
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)


class ImageParams(ImageSettings):
    """:class:`~urbanarena.agents.clients.ImageSettings`, finite numbers only."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class ClientParams(_Params):
    """What configures the model client of a VLM agent (see ``docs/model-clients.md``)."""

    timeout_s: float = Field(120.0, ge=MIN_TIMEOUT_S, le=MAX_TIMEOUT_S,
                             description=f"per-request timeout, seconds (ours: {MIN_TIMEOUT_S:g} to {MAX_TIMEOUT_S:g})")
    retry: RetryParams | None = Field(None, description="retry policy fields (max_retries <= 20, waits <= 3600 s)")
    generation: GenerationParams | None = Field(None, description="generation settings overriding the protocol preset")
    images: ImageParams | None = Field(None, description="image encoding settings")
    cache: Literal["off", "read-write", "read-only"] = Field("off", description="response-cache mode (run: read-write)")
    cache_path: str | None = Field(None, description="response-cache SQLite file (run: RUN_DIR/responses.sqlite)")
    max_usd: float | None = Field(None, gt=0.0, description="stop before spending more than this, USD")
    max_requests: int | None = Field(None, ge=1, description="stop before more than this many API requests")
    budget_ledger: str | None = Field(None, description="budget ledger SQLite file (run: RUN_DIR/budget.sqlite)")
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                    description="name of the variable holding the API key (else the provider's)")


class ModelAgentParams(ClientParams):
    """Parameters every VLM agent takes (``urbanarena.agents.vlm.common``)."""

    model: str | None = Field(None, description="model spec, e.g. openai:gpt-4o (or --model)")
    prompt_templates: str | dict[str, str] | None = Field(
        None, description="folder of <name>.txt prompt templates, or {name: path}")
    control: dict[str, Any] | str | None = Field(
        None, description="control mode: blind, no-map, oracle-perception (or --blind/--no-map/--oracle-perception)")

    @field_validator("model")
    @classmethod
    def _spec(cls, v: str | None) -> str | None:
        if v is not None:
            from urbanarena.agents.clients import parse_model_spec

            try:
                parse_model_spec(v)
            except UrbanArenaError as e:
                raise ValueError(str(e)) from None
        return v

    @field_validator("control")
    @classmethod
    def _control(cls, v: Any) -> Any:
        from urbanarena.agents.controls import ControlMode

        mode = ControlMode.from_value(v)  # ValueError names the bad field
        if not math.isfinite(float(mode.perception_range_m)):
            raise ValueError("perception_range_m must be finite")
        return v


class ArenaVLMParams(ModelAgentParams):
    """360CityArena-style ReAct agent."""

    include_map: bool = Field(True, description="send the task's map images")


class CitySeekerVLMParams(ModelAgentParams):
    """CitySeeker's two-phase (stop, then choice) VLM agent."""

    hfov_deg: float = Field(120.0, gt=0.0, lt=180.0, description="field of view of each direction crop, degrees")
    crop_size: tuple[int, int] = Field((1024, 512), description="direction crop width, height in pixels (each 1-8192)")
    pano_max_width: int | None = Field(None, ge=16, le=65_536, description="downscale panoramas to this width, pixels")
    imagery_base_dir: str | None = Field(None, description="folder that relative panorama paths start from")
    cache_bytes: int = Field(1 << 30, ge=0, le=1 << 40, description="decoded-panorama cache budget, bytes")
    render_width: int | None = Field(None, ge=16, le=16_384, description="rendered panorama width, pixels (rendered cities)")

    @field_validator("crop_size")
    @classmethod
    def _crop(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not all(1 <= x <= 8192 for x in v):
            raise ValueError(f"crop_size must be two integers in 1..8192, got {list(v)}")
        return v


class UrbanGroundVLMParams(ModelAgentParams):
    """UrbanGround JSON-action agent."""

    parse_failure: Literal["corrective-re-ask", "re-request"] = Field(
        "corrective-re-ask", description="what an unparseable reply does: a corrective re-ask, or the same request again")
    max_reasks: int = Field(2, ge=0, le=8, description="corrective re-asks per step")
    recent_actions_window: int = Field(5, ge=0, le=1000, description="recent actions repeated in each prompt")
    include_references: bool = Field(True, description="send the task's reference images (state inputs)")
    inputs: Literal["reference", "state"] | None = Field(
        None, description="reference: UrbanGround's released agent (screenshot only, text conversation); state: ours "
                          "(privileged state text: lat/lon, street, on-footway); default: the protocol's agent_inputs")


#: the schema of every registered agent (registry name -> model)
AGENT_PARAMS: dict[str, type[_Params]] = {
    "random": RandomParams,
    "forward": ForwardParams,
    "straight": StraightParams,
    "oracle": OracleParams,
    "arena-oracle": ArenaOracleParams,
    "arena-random": ArenaRandomParams,
    "arena-straight": ArenaStraightParams,
    "bc": BCParams,
    "ug-oracle": UrbanGroundOracleParams,
    "ug-random": UrbanGroundRandomParams,
    "ug-straight": UrbanGroundStraightParams,
    "ocr": OcrParams,
    "vlm-arena": ArenaVLMParams,
    "vlm-cityseeker": CitySeekerVLMParams,
    "vlm-urbanground": UrbanGroundVLMParams,
}


def _describe(err: dict[str, Any]) -> str:
    loc = ".".join(str(x) for x in err.get("loc", ()))
    msg = str(err.get("msg", "invalid"))
    kind, ctx = err.get("type"), err.get("ctx") or {}
    if kind == "extra_forbidden":
        return f"-p {loc}: unknown parameter"
    bound = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}.get(kind)
    if bound is not None:
        msg = f"must be {bound} {next(iter(ctx.values()))}"
    elif kind == "finite_number":
        msg = "must be a finite number"
    return f"-p {loc}={redact_urls(repr(err.get('input')))}: {msg}"


def validate_agent_params(name: str, params: dict[str, Any], skip: tuple[str, ...] = ("client",)) -> dict[str, Any]:
    """Check ``params`` against the schema of agent ``name``.

    Args:
        name: registry name; a ``module:Callable`` or an unknown name is not checked here (returned as is).
        params: keyword arguments of the agent (``-p`` values after the model flags are applied).
        skip: keys not part of any schema (``client``: a ready client object passed by tests).
    Returns: ``params`` unchanged (the agent still receives what the user wrote).
    Raises:
        AgentParamError: an unknown key, a wrong type or a value outside its range; the message names the
            agent, the key and value, the rule, and the known keys.
    """
    model = AGENT_PARAMS.get(name)
    if model is None:
        return params
    try:
        model.model_validate({k: v for k, v in params.items() if k not in skip})
    except ValidationError as e:
        errs = e.errors()
        known = ", ".join(model.model_fields) or "none"
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        raise AgentParamError(f"agent {name!r}: {_describe(errs[0])}{more}; its parameters: {known} "
                              f"(urbanarena agents {name})") from None
    return params


def _range(field: Any) -> str:
    parts = []
    for m in field.metadata:
        for attr, sym in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v:g}" if isinstance(v, float) else f"{sym} {v}")
        pat = getattr(m, "pattern", None)
        if pat:
            parts.append(f"matches {pat}")
    return ", ".join(parts)


def _type_name(ann: Any) -> str:
    text = str(ann).replace("typing.", "").replace("urbanarena.agents.params.", "")
    return text.replace("<class '", "").replace("'>", "")


def params_table(name: str) -> list[dict[str, str]]:
    """Rows ``{key, type, default, range, description}`` of agent ``name``'s schema (nested models flattened
    as ``retry.max_retries`` ...).

    Raises:
        KeyError: ``name`` has no schema (the message lists the agents that have one).
    """
    model = AGENT_PARAMS.get(name)
    if model is None:
        raise KeyError(f"no parameter schema for agent {name!r}; known: {', '.join(AGENT_PARAMS)}")
    rows: list[dict[str, str]] = []

    def walk(m: type[BaseModel], prefix: str) -> None:
        for key, f in m.model_fields.items():
            ann = f.annotation
            sub = next((a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)),
                       None)
            rows.append({"key": prefix + key, "type": sub.__name__ if sub else _type_name(ann),
                         "default": repr(f.default), "range": _range(f), "description": f.description or ""})
            if sub is not None:
                walk(sub, prefix + key + ".")

    walk(model, "")
    return rows


__all__ = ["AGENT_PARAMS", "AgentParamError", "ClientParams", "ModelAgentParams", "params_table",
           "validate_agent_params"]
