"""The needs mapping file of ``cityseeker_needs`` (``needs_v1.json``): its schema, clauses, needs and loading."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from urbanarena.errors import TaskFormatError
from urbanarena.world.annotations import OBJECT_TYPES
from urbanarena.tasks.generators.needs_rules import MAPPING_FORMAT, default_mapping_path


# --------------------------------------------------------------------------- mapping file
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _nonempty(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be empty")
    return v


class _ClauseModel(_Strict):
    tags: dict[str, str | list[str]] = Field(default_factory=dict)
    name: str | None = None
    object_type: str | None = None

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        for k, val in v.items():
            if not k.strip():
                raise ValueError("empty tag key")
            vals = [val] if isinstance(val, str) else val
            if not vals or any(not isinstance(x, str) or not x.strip() for x in vals):
                raise ValueError(f"tag {k!r}: values must be non-empty strings")
        return v

    @field_validator("name")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"invalid regular expression {v!r}: {e}") from None
        return v

    @field_validator("object_type")
    @classmethod
    def _otype(cls, v: str | None) -> str | None:
        if v is not None and v not in OBJECT_TYPES:
            raise ValueError(f"unknown object_type {v!r}; one of {', '.join(OBJECT_TYPES)}")
        return v

    @model_validator(mode="after")
    def _something(self):
        if not self.tags and self.name is None and self.object_type is None:
            raise ValueError("a clause needs tags, name or object_type")
        return self


class _NeedModel(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_]{0,63}$")
    category: Literal["basic_poi", "brand_specific", "transport_hub", "latent_poi", "implicit_need",
                      "accessible_entrance", "semantic_preference"]
    label: str
    instructions: list[str] = Field(min_length=1)
    errands: list[str] = Field(default_factory=list)
    match: list[_ClauseModel] = Field(min_length=1)

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        return _nonempty(v)

    @field_validator("instructions", "errands")
    @classmethod
    def _texts(cls, v: list[str]) -> list[str]:
        for s in v:
            _nonempty(s)
        return v


def _template(t: str) -> str:
    try:
        filled = t.format(first="A", second="B")
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(f"template {t!r}: only {{first}} and {{second}} may be used ({e})") from None
    if "{first}" not in t or "{second}" not in t or not filled.strip():
        raise ValueError(f"template {t!r} must contain {{first}} and {{second}}")
    return t


class _MappingModel(_Strict):
    format: Literal["urbanarena-needs"]
    version: Literal[1]
    description: str = ""
    two_stop_templates: list[Annotated[str, AfterValidator(_template)]] = Field(default_factory=list)
    needs: list[_NeedModel] = Field(min_length=1)


@dataclass(frozen=True)
class Clause:
    """One ``match`` clause (module docstring): all ``tags`` hold, ``name`` matches, and the place is a
    street object of ``object_type`` (or a POI when ``object_type`` is ``None``)."""

    tags: tuple[tuple[str, frozenset[str] | None], ...]  # None = "*"
    name: re.Pattern[str] | None
    object_type: str | None

    def matches(self, tags: dict[str, str], object_type: str | None) -> bool:
        """Whether a place with these raw OSM tags (``object_type`` ``None`` for a POI) satisfies the clause."""
        if object_type != self.object_type:
            return False
        for k, allowed in self.tags:
            v = tags.get(k)
            if v is None:
                return False
            parts = {p.strip().casefold() for p in str(v).split(";") if p.strip()}
            if allowed is None:
                if not parts or parts == {"no"}:
                    return False
            elif not (parts & allowed):
                return False
        if self.name is not None:
            names = [tags.get(k) for k in ("name", "name:en", "brand")]
            if not any(n and self.name.search(n) for n in names):
                return False
        return True


@dataclass(frozen=True)
class Need:
    """A need of the mapping (module docstring)."""

    id: str
    category: str
    label: str
    instructions: tuple[str, ...]
    errands: tuple[str, ...]
    clauses: tuple[Clause, ...]

    def matches(self, tags: dict[str, str], object_type: str | None = None) -> bool:
        """Any clause matches (``object_type`` ``None``: the place is a POI)."""
        return any(c.matches(tags, object_type) for c in self.clauses)


@dataclass(frozen=True)
class NeedMapping:
    """A loaded need mapping: the needs in file order, the two-stop templates, the file name and sha256."""

    needs: tuple[Need, ...]
    two_stop_templates: tuple[str, ...]
    source: str
    sha256: str

    def by_category(self, category: str) -> list[Need]:
        return [n for n in self.needs if n.category == category]


def load_needs(path: str | Path | None = None) -> NeedMapping:
    """Read and validate a need mapping (default: the built-in :func:`default_mapping_path`).

    Returns: a :class:`NeedMapping` (``source`` = the file name, ``sha256`` of its bytes).
    Raises:
        TaskFormatError: missing or unreadable file, invalid JSON, or a record
            that breaks the format (message names the file and the record,
            e.g. ``needs[3] (id 'thirsty') field match.0.object_type``):
            unknown or missing fields, an unknown category or object type, an
            invalid regular expression, empty instructions, a duplicate need
            id, a two-stop template without ``{first}``/``{second}``, or
            ``two_stop_templates`` missing while a need has errands.
    """
    p = Path(path) if path is not None else default_mapping_path()
    try:
        data = p.read_bytes()
    except FileNotFoundError as e:
        raise TaskFormatError(p, None, "need mapping file not found") from e
    except OSError as e:
        raise TaskFormatError(p, None, f"cannot read need mapping: {e}") from e
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TaskFormatError(p, None, f"not UTF-8 text: {e}") from e
    except json.JSONDecodeError as e:
        raise TaskFormatError(p, f"line {e.lineno}", f"invalid JSON: {e.msg}") from e
    if not isinstance(raw, dict):
        raise TaskFormatError(p, None, "expected a JSON object with format, version, needs")
    if raw.get("format") != MAPPING_FORMAT:
        raise TaskFormatError(p, "format", f"not a need mapping (expected format {MAPPING_FORMAT!r})")
    try:
        m = _MappingModel.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err.get("loc", ()))
        record = ".".join(str(x) for x in loc) or None
        if len(loc) >= 2 and loc[0] == "needs" and isinstance(loc[1], int):
            i = loc[1]
            nid = None
            try:
                nid = raw["needs"][i].get("id")
            except Exception:  # noqa: BLE001 - the record itself may be malformed
                pass
            record = f"needs[{i}]" + (f" (id {nid!r})" if nid else "")
            if len(loc) > 2:
                record += " field " + ".".join(str(x) for x in loc[2:])
        elif len(loc) >= 2 and loc[0] == "two_stop_templates":
            record = f"two_stop_templates[{loc[1]}]"
        raise TaskFormatError(p, record, err.get("msg", str(e))) from e
    seen: dict[str, int] = {}
    for i, n in enumerate(m.needs):
        if n.id in seen:
            raise TaskFormatError(p, f"needs[{i}] (id {n.id!r})", f"duplicate need id (first at needs[{seen[n.id]}])")
        seen[n.id] = i
    if any(n.errands for n in m.needs) and not m.two_stop_templates:
        raise TaskFormatError(p, "two_stop_templates", "needs have errands but no two-stop template is given")
    needs = []
    for n in m.needs:
        clauses = []
        for c in n.match:
            tags = tuple(
                (k, None if v == "*" else frozenset(x.strip().casefold() for x in ([v] if isinstance(v, str) else v)))
                for k, v in sorted(c.tags.items()))
            clauses.append(Clause(tags, re.compile(c.name, re.IGNORECASE) if c.name is not None else None,
                                  c.object_type))
        needs.append(Need(n.id, n.category, n.label.strip(), tuple(n.instructions), tuple(n.errands), tuple(clauses)))
    return NeedMapping(tuple(needs), tuple(m.two_stop_templates), p.name, hashlib.sha256(data).hexdigest())
