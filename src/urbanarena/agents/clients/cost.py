"""Token and cost preflight, the price table, and the budget guard.

Image-token rules (what the provider bills for one image of ``W x H`` pixels
*as sent*, i.e. after our own :func:`~urbanarena.agents.clients.images.planned_size`):

* ``openai-tile`` — OpenAI GPT-4o / GPT-4.1 family
  (https://platform.openai.com/docs/guides/images-vision#calculating-costs):
  ``detail="low"`` costs ``base_tokens`` (85). ``high`` (and ``auto``/unset,
  counted as high for an upper bound): scale to fit in a 2048 x 2048 square,
  then scale so the shortest side is 768 px, then count 512-px tiles;
  tokens = ``base_tokens + tile_tokens * tiles`` (85 + 170 per tile for
  GPT-4o; 2833 + 5667 for GPT-4o-mini). The guide's worked examples are
  downscales (1024x1024 -> 768x768, 4 tiles, 765 tokens; 2048x4096 ->
  768x1536, 6 tiles, 1105 tokens); we never upscale an image whose shortest
  side is already below 768 px.
* ``openai-patch`` — GPT-4.1-mini/nano, o4-mini (same guide): count 32-px
  patches ``ceil(W/32) * ceil(H/32)``; above ``max_patches`` (1536) the image
  is scaled by ``r = sqrt(32^2 * 1536 / (W*H))``, shrunk further so a whole
  number of patches fits the width or height, and the patches are recounted
  (capped at 1536); tokens = ``patches * multiplier`` (1.62 for 4.1-mini,
  2.46 for 4.1-nano), rounded up.
* ``area`` — Anthropic
  (https://docs.anthropic.com/en/docs/build-with-claude/vision, "Evaluate
  image size" / "Calculate image costs"): tokens ~= ``W*H / 750``; an image
  whose long edge exceeds 1568 px or that exceeds ~1,600 tokens is first
  scaled down, aspect kept, so we fit the long edge to ``max_long_edge_px``
  (1568) and the area to ``max_pixels`` (1,200,000 px = 1,600 tokens x 750)
  before dividing. The same rule with 784 px per token (28 x 28) approximates
  Qwen2-VL-style local servers.
* ``none`` — images not billed separately.

Text tokens are estimated as ``ceil(characters / 4)`` (OpenAI's rule of
thumb, ~4 characters of English per token) plus 4 tokens per message and 3
for the reply priming (OpenAI cookbook "How to count tokens with tiktoken").
Estimates are planning numbers, not bills: :class:`BudgetGuard` charges what
the provider *reports* and reserves an upper bound before each request.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from urbanarena.agents.clients.errors import BudgetExceeded, ModelClientError
from urbanarena.agents.clients.images import planned_size
from urbanarena.agents.clients.types import GenerationSettings, ImageSettings, ModelRequest, Text

TEXT_CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4
TOKENS_REPLY_PRIMING = 3

PRICES_ENV = "URBANARENA_PRICES"
"""Environment variable naming a price-table JSON that overrides the shipped one."""


# ----------------------------------------------------------------------------- image rules
def openai_tile_tokens(width: int, height: int, detail: str | None = "high", base_tokens: int = 85, tile_tokens: int = 170) -> int:
    """OpenAI tile rule (see module docstring). ``detail`` ``None``/``auto`` count as ``high``."""
    if detail == "low":
        return base_tokens
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    w, h = math.floor(w), math.floor(h)
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return base_tokens + tile_tokens * tiles


def openai_patch_tokens(width: int, height: int, patch_px: int = 32, max_patches: int = 1536, multiplier: float = 1.0) -> int:
    """OpenAI patch rule (see module docstring)."""
    patches = math.ceil(width / patch_px) * math.ceil(height / patch_px)
    if patches > max_patches:
        r = math.sqrt(patch_px**2 * max_patches / (width * height))
        r *= min(math.floor(width * r / patch_px) / (width * r / patch_px), math.floor(height * r / patch_px) / (height * r / patch_px))
        w, h = int(width * r), int(height * r)
        patches = min(max_patches, math.ceil(w / patch_px) * math.ceil(h / patch_px))
    return math.ceil(patches * multiplier)


def area_tokens(width: int, height: int, pixels_per_token: float = 750.0, max_long_edge_px: int | None = 1568, max_pixels: int | None = 1_200_000) -> int:
    """Area rule (Anthropic; see module docstring): ``ceil(W*H / pixels_per_token)`` after the provider's downscale."""
    w, h = float(width), float(height)
    if max_long_edge_px is not None and max(w, h) > max_long_edge_px:
        s = max_long_edge_px / max(w, h)
        w, h = w * s, h * s
    if max_pixels is not None and w * h > max_pixels:
        s = math.sqrt(max_pixels / (w * h))
        w, h = w * s, h * s
    return math.ceil(math.floor(w) * math.floor(h) / pixels_per_token)


ImageRule = Literal["openai-tile", "openai-patch", "area", "none"]


class ModelPrice(BaseModel):
    """Price-table entry of one model (USD per million tokens; ``None`` = unknown)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    image_rule: ImageRule = "none"
    image_params: dict[str, Any] = {}
    source: str = ""
    matched: str = ""

    @property
    def priced(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None

    def image_tokens(self, width: int, height: int, detail: str | None = None) -> int:
        """Billed tokens of one image of ``width x height`` px as sent."""
        p = self.image_params
        if self.image_rule == "openai-tile":
            return openai_tile_tokens(width, height, detail, p.get("base_tokens", 85), p.get("tile_tokens", 170))
        if self.image_rule == "openai-patch":
            return openai_patch_tokens(width, height, p.get("patch_px", 32), p.get("max_patches", 1536), p.get("multiplier", 1.0))
        if self.image_rule == "area":
            return area_tokens(width, height, p.get("pixels_per_token", 750.0), p.get("max_long_edge_px", 1568), p.get("max_pixels", 1_200_000))
        return 0

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """``(in * input_per_mtok + out * output_per_mtok) / 1e6``, or ``None`` when unpriced."""
        if not self.priced:
            return None
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6  # type: ignore[operator]


class PriceTable:
    """The price table: the shipped ``prices.json`` merged with an optional override file.

    An override file has the same layout (``providers -> <provider> ->
    default|models``); its entries replace or extend the shipped ones field by
    field. Lookup: longest model-name prefix within the provider, fields not
    given by the model entry come from the provider's ``default``.

    Args:
        override: path of an override JSON; ``None`` reads ``$URBANARENA_PRICES`` if set.
    Raises:
        ModelClientError: unreadable or malformed override.
    """

    def __init__(self, override: str | Path | None = None):
        shipped = json.loads(resources.files("urbanarena.agents.clients").joinpath("prices.json").read_text())
        self.sources = ["<shipped prices.json>"]
        self.data = shipped
        path = override if override is not None else os.environ.get(PRICES_ENV)
        if path:
            try:
                extra = json.loads(Path(path).read_text())
                if not isinstance(extra.get("providers"), dict):
                    raise ValueError("top-level key 'providers' (object) missing")
            except (OSError, ValueError) as e:
                raise ModelClientError(f"price table {path}: {e}") from e
            for prov, block in extra["providers"].items():
                dst = self.data["providers"].setdefault(prov, {"default": {}, "models": {}})
                dst.setdefault("default", {}).update(block.get("default", {}))
                for name, entry in block.get("models", {}).items():
                    dst.setdefault("models", {}).setdefault(name, {}).update(entry)
            self.sources.append(str(path))

    def lookup(self, provider: str, model: str) -> ModelPrice:
        """Price entry for ``provider``/``model`` (see class docstring)."""
        block = self.data["providers"].get(provider, {"default": {}, "models": {}})
        entry = dict(block.get("default", {}))
        matched = "default"
        best = max((n for n in block.get("models", {}) if model == n or model.startswith(n)), key=len, default=None)
        if best is not None:
            m = block["models"][best]
            params = {**entry.get("image_params", {}), **m.get("image_params", {})}
            entry.update(m)
            entry["image_params"] = params
            matched = best
        entry["matched"] = matched
        return ModelPrice(**entry)


# ----------------------------------------------------------------------------- request estimates
@dataclass(frozen=True)
class RequestShape:
    """What one request looks like, for a preflight estimate.

    Attributes:
        image_sizes: ``(width, height)`` of each image in the request, pixels,
            before our encoder's limits.
        text_chars: characters of text (system prompt and all turns).
        messages: number of turns.
    """

    image_sizes: tuple[tuple[int, int], ...] = ()
    text_chars: int = 0
    messages: int = 1

    @staticmethod
    def of(request: ModelRequest) -> RequestShape:
        """The shape of a concrete request."""
        chars = len(request.system or "")
        sizes = []
        for m in request.messages:
            for p in m.parts():
                if isinstance(p, Text):
                    chars += len(p.text)
                else:
                    sizes.append((p.width, p.height))
        return RequestShape(tuple(sizes), chars, len(request.messages) + (1 if request.system else 0))


def text_tokens(chars: int, messages: int = 1) -> int:
    """Estimated text tokens: ``ceil(chars / 4) + 4 * messages + 3`` (module docstring)."""
    return math.ceil(chars / TEXT_CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * messages + TOKENS_REPLY_PRIMING


def request_input_tokens(shape: RequestShape, price: ModelPrice, images: ImageSettings, provider: str) -> tuple[int, int]:
    """Estimated ``(input_tokens, image_tokens)`` of one request (images after our own downscale)."""
    img = sum(price.image_tokens(*planned_size(w, h, images, provider), detail=images.detail) for w, h in shape.image_sizes)
    return text_tokens(shape.text_chars, shape.messages) + img, img


class RunEstimate(BaseModel):
    """Preflight numbers for ``--dry-run`` (upper bounds unless noted).

    Attributes:
        provider / model / price_matched / price_source: what was priced how.
        requests: ``tasks * seeds * step_limit * requests_per_step``.
        images: ``requests * images per request``.
        input_tokens: ``requests * per-request input estimate``.
        image_tokens: the image part of ``input_tokens``.
        output_tokens: ``requests * output tokens per request`` (default
            ``max_output_tokens``: an upper bound).
        input_cost_usd / output_cost_usd / cost_usd: from the price table;
            ``None`` when the model is not priced.
        per_request_input_tokens / per_request_image_tokens: one request.
    """

    provider: str
    model: str
    price_matched: str
    price_source: str
    tasks: int
    seeds: int
    step_limit: int
    requests_per_step: int
    requests: int
    images: int
    per_request_input_tokens: int
    per_request_image_tokens: int
    input_tokens: int
    image_tokens: int
    output_tokens: int
    input_cost_usd: float | None
    output_cost_usd: float | None
    cost_usd: float | None

    def format(self) -> str:
        """Human-readable block for the terminal."""
        cost = "unknown (model not in the price table)" if self.cost_usd is None else f"${self.cost_usd:,.2f}"
        return "\n".join([
            f"model            {self.provider}:{self.model} (price entry: {self.price_matched})",
            f"requests (max)   {self.requests:,} = {self.tasks} tasks x {self.seeds} seeds x {self.step_limit} steps"
            + (f" x {self.requests_per_step} requests/step" if self.requests_per_step != 1 else ""),
            f"images           {self.images:,}",
            f"input tokens     {self.input_tokens:,} (images {self.image_tokens:,}; {self.per_request_input_tokens:,} per request)",
            f"output tokens    {self.output_tokens:,} (upper bound)",
            f"cost (max)       {cost}",
        ])


def estimate_run(
    provider: str,
    model: str,
    shape: RequestShape,
    *,
    tasks: int,
    seeds: int,
    step_limit: int,
    generation: GenerationSettings,
    images: ImageSettings,
    prices: PriceTable | None = None,
    requests_per_step: int = 1,
    output_tokens_per_request: int | None = None,
) -> RunEstimate:
    """Upper-bound request, image, token and cost estimate of a run.

    Args:
        provider, model: as in the model spec.
        shape: one request (the largest the agent sends; see :class:`RequestShape`).
        tasks, seeds, step_limit: the suite; every request counts toward the
            step limit, so ``tasks * seeds * step_limit`` bounds the requests.
        generation: its ``max_output_tokens`` bounds output tokens.
        images: our encoder's limits (applied before the provider's rule).
        prices: price table (default: shipped + ``$URBANARENA_PRICES``).
        requests_per_step: > 1 for protocols that re-request without
            consuming a step (``cityarena-v1``: up to 1 + 3).
        output_tokens_per_request: override of ``max_output_tokens`` for a
            typical rather than worst-case estimate.
    Returns: the :class:`RunEstimate`.
    """
    price = (prices or PriceTable()).lookup(provider, model)
    per_in, per_img = request_input_tokens(shape, price, images, provider)
    requests = tasks * seeds * step_limit * requests_per_step
    out_per = generation.max_output_tokens if output_tokens_per_request is None else output_tokens_per_request
    in_tok, out_tok = requests * per_in, requests * out_per
    in_cost = out_cost = None
    if price.priced:
        in_cost = in_tok * price.input_per_mtok / 1e6  # type: ignore[operator]
        out_cost = out_tok * price.output_per_mtok / 1e6  # type: ignore[operator]
    return RunEstimate(
        provider=provider, model=model, price_matched=price.matched, price_source=price.source,
        tasks=tasks, seeds=seeds, step_limit=step_limit, requests_per_step=requests_per_step,
        requests=requests, images=requests * len(shape.image_sizes),
        per_request_input_tokens=per_in, per_request_image_tokens=per_img,
        input_tokens=in_tok, image_tokens=requests * per_img, output_tokens=out_tok,
        input_cost_usd=in_cost, output_cost_usd=out_cost,
        cost_usd=None if in_cost is None else in_cost + out_cost,  # type: ignore[operator]
    )


# ----------------------------------------------------------------------------- budget guard
@dataclass
class Reservation:
    """A request admitted by :meth:`BudgetGuard.reserve` (settle or release it)."""

    upper_usd: float
    done: bool = False


@dataclass
class BudgetGuard:
    """Stops a run before it exceeds ``max_usd`` or ``max_requests``.

    Before each API request (cache hits are free and not counted) the client
    calls :meth:`reserve` with the request's upper-bound cost (estimated
    input tokens plus ``max_output_tokens``, at the table's prices). It raises
    :class:`BudgetExceeded` when ``requests_used + 1 > max_requests`` or when
    ``spent + reserved + upper > max_usd``, so the cap is never crossed even
    by requests in flight. After the reply :meth:`settle` replaces the
    reservation by the cost computed from the reported usage; a request that
    got no reply is :meth:`release`\\ d (it still counts as a request).

    With ``ledger_path`` the counts live in a small SQLite file (atomic
    ``BEGIN IMMEDIATE`` updates), so several worker processes share one budget
    and a resumed run continues from what was spent; without it they live in
    memory (one process).

    Attributes:
        max_usd: USD cap or ``None``.
        max_requests: API-request cap or ``None``.
        ledger_path: SQLite ledger file or ``None``.
    """

    max_usd: float | None = None
    max_requests: int | None = None
    ledger_path: str | Path | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _mem: dict[str, float] = field(default_factory=lambda: {"requests": 0, "spent_usd": 0.0, "reserved_usd": 0.0}, repr=False)

    def __post_init__(self):
        if self.ledger_path is not None:
            with self._db() as con:
                con.execute("CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY CHECK (id = 0), requests INTEGER NOT NULL, spent_usd REAL NOT NULL, reserved_usd REAL NOT NULL)")
                con.execute("INSERT OR IGNORE INTO ledger VALUES (0, 0, 0.0, 0.0)")

    @property
    def active(self) -> bool:
        return self.max_usd is not None or self.max_requests is not None

    def _db(self) -> sqlite3.Connection:
        con = sqlite3.connect(str(self.ledger_path), timeout=60.0, isolation_level=None)
        con.execute("PRAGMA busy_timeout=60000")
        return _Tx(con)  # type: ignore[return-value]

    def _update(self, fn) -> Any:
        with self._lock:
            if self.ledger_path is None:
                return fn(self._mem)
            with self._db() as con:
                row = con.execute("SELECT requests, spent_usd, reserved_usd FROM ledger WHERE id = 0").fetchone()
                state = {"requests": row[0], "spent_usd": row[1], "reserved_usd": row[2]}
                out = fn(state)
                con.execute("UPDATE ledger SET requests = ?, spent_usd = ?, reserved_usd = ? WHERE id = 0",
                            (int(state["requests"]), float(state["spent_usd"]), max(0.0, float(state["reserved_usd"]))))
                return out

    def usage(self) -> dict[str, float]:
        """``{"requests", "spent_usd", "reserved_usd"}`` now."""
        return self._update(lambda s: dict(s))

    def reserve(self, upper_usd: float | None) -> Reservation:
        """Admit one API request whose cost is at most ``upper_usd``.

        Raises:
            BudgetExceeded: the request would cross a cap (nothing is recorded).
            ModelClientError: ``max_usd`` is set and ``upper_usd`` is ``None``
                (unpriced model: the cap cannot be enforced).
        """
        if self.max_usd is not None and upper_usd is None:
            raise ModelClientError("max_usd is set but the model has no price in the price table; add one (--prices FILE)")
        up = float(upper_usd or 0.0)

        def fn(s):
            if self.max_requests is not None and s["requests"] + 1 > self.max_requests:
                raise BudgetExceeded("max_requests", self.max_requests, s["requests"], 1)
            if self.max_usd is not None and s["spent_usd"] + s["reserved_usd"] + up > self.max_usd:
                raise BudgetExceeded("max_usd", self.max_usd, s["spent_usd"] + s["reserved_usd"], up)
            s["requests"] += 1
            s["reserved_usd"] += up
            return Reservation(up)

        return self._update(fn)

    def settle(self, reservation: Reservation, actual_usd: float | None) -> None:
        """Replace the reservation by the actual cost (``None`` counts 0)."""
        if reservation.done:
            return
        reservation.done = True

        def fn(s):
            s["reserved_usd"] -= reservation.upper_usd
            s["spent_usd"] += float(actual_usd or 0.0)

        self._update(fn)

    def release(self, reservation: Reservation) -> None:
        """Drop the reservation of a request that got no reply (the request stays counted)."""
        self.settle(reservation, 0.0)


class _Tx:
    """``with`` block = one ``BEGIN IMMEDIATE`` transaction on an autocommit connection, then close."""

    def __init__(self, con: sqlite3.Connection):
        self.con = con

    def __enter__(self) -> sqlite3.Connection:
        self.con.execute("BEGIN IMMEDIATE")
        return self.con

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.con.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.con.close()
