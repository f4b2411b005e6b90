"""Prompt templates of the VLM agents: text files shipped with the package, overridable by user files.

Templates are plain UTF-8 text with ``${name}`` placeholders
(:class:`string.Template` syntax; write ``$$`` for a literal dollar sign).
Each template name has a fixed set of placeholders (:data:`TEMPLATE_FIELDS`);
a template may use any subset of them, and an unknown placeholder is an
error naming the file.

=========================  ===================================  ==========================================
name                       placeholders                         used for
=========================  ===================================  ==========================================
``arena_system``           ``task``                             system prompt of the arena ReAct agent
``arena_step``             ``memory``, ``recent_actions``,      text of the user turn at each step
                           ``step``
``arena_correction``       ``error``                            corrective re-ask (``urbanarena-v1``)
``cityseeker_stop``        ``question``                         stop decision on the panorama
``cityseeker_choice``      ``question``, ``count``, ``labels``,  choice among per-heading crops
                           ``directions``
``cityseeker_correction``  ``error``                            corrective re-ask (``urbanarena-graph-v1``)
``urbanground_system``     ``task``                             system prompt of the UrbanGround agent
``urbanground_step``       ``state``, ``notices``,              text of the user turn at each step
                           ``last_result``, ``memory``,
                           ``recent_actions``, ``step``,
                           ``mode``, ``allowed``
``urbanground_correction`` ``error``, ``allowed``               corrective re-ask (UrbanGround agent)
``urbanground_ref_*``      see below                            ``-p inputs=reference`` (``urbanground-v1``)
=========================  ===================================  ==========================================

The UrbanGround agent's reference inputs (:mod:`urbanarena.agents.vlm.urbanground_react`):
``urbanground_ref_question_system`` / ``urbanground_ref_navigation_system`` (no placeholders: the
system prompt of a question / navigation task), ``urbanground_ref_task`` (``task``: the first turn's
task block), ``urbanground_ref_turn`` (none: every turn's closing line), ``urbanground_ref_correction``
(``error``, ``allowed``; the default names neither, as UrbanGround's agent does not) and
``urbanground_ref_final`` (``letters``, e.g. ``A|B|C|D``: the final-answer request).

Overrides: a folder holding ``<name>.txt`` files (names it lacks keep the
default) or a mapping ``{name: path}``. Every template's sha256 (of its text
as UTF-8) enters the agent's ``config()`` and so the run's config hash; the
path does not (the same text from another place is the same configuration).
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Mapping

from urbanarena.errors import UrbanArenaError

#: template name -> the placeholders it may use
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {
    "arena_system": frozenset({"task"}),
    "arena_step": frozenset({"memory", "recent_actions", "step"}),
    "arena_correction": frozenset({"error"}),
    "cityseeker_stop": frozenset({"question"}),
    "cityseeker_choice": frozenset({"question", "count", "labels", "directions"}),
    "cityseeker_correction": frozenset({"error"}),
    "urbanground_system": frozenset({"task"}),
    "urbanground_step": frozenset({"state", "notices", "last_result", "memory", "recent_actions", "step", "mode",
                                   "allowed"}),
    "urbanground_correction": frozenset({"error", "allowed"}),
    "urbanground_ref_question_system": frozenset(),
    "urbanground_ref_navigation_system": frozenset(),
    "urbanground_ref_task": frozenset({"task"}),
    "urbanground_ref_turn": frozenset(),
    "urbanground_ref_correction": frozenset({"error", "allowed"}),
    "urbanground_ref_final": frozenset({"letters"}),
}

ARENA_TEMPLATES = ("arena_system", "arena_step", "arena_correction")
CITYSEEKER_TEMPLATES = ("cityseeker_stop", "cityseeker_choice", "cityseeker_correction")
URBANGROUND_TEMPLATES = ("urbanground_system", "urbanground_step", "urbanground_correction",
                         "urbanground_ref_question_system", "urbanground_ref_navigation_system", "urbanground_ref_task",
                         "urbanground_ref_turn", "urbanground_ref_correction", "urbanground_ref_final")


class PromptTemplateError(UrbanArenaError, ValueError):
    """A template file is missing, unreadable, or uses an unknown/malformed placeholder."""


@dataclass(frozen=True)
class PromptTemplate:
    """One loaded template.

    Attributes:
        name: template name (a key of :data:`TEMPLATE_FIELDS`).
        text: the template text.
        source: ``"package"`` or the user file's path.
    """

    name: str
    text: str
    source: str

    @property
    def sha256(self) -> str:
        """sha256 hex of the template text (UTF-8)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def render(self, **values: object) -> str:
        """The text with every placeholder replaced by ``str(value)``.

        Raises:
            PromptTemplateError: a placeholder the template uses has no value.
        """
        try:
            return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})
        except KeyError as e:
            raise PromptTemplateError(f"template {self.name!r} ({self.source}): no value for placeholder {e}") from None


def _check(name: str, text: str, source: str) -> PromptTemplate:
    if name not in TEMPLATE_FIELDS:
        raise PromptTemplateError(f"unknown prompt template {name!r}; known: {', '.join(TEMPLATE_FIELDS)}")
    t = string.Template(text)
    if not t.is_valid():
        raise PromptTemplateError(f"{source}: template {name!r} has a malformed placeholder (use ${{name}}; "
                                  "write $$ for a literal dollar sign)")
    unknown = set(t.get_identifiers()) - TEMPLATE_FIELDS[name]
    if unknown:
        raise PromptTemplateError(f"{source}: template {name!r} uses unknown placeholder(s) "
                                  f"{', '.join(sorted(unknown))}; allowed: {', '.join(sorted(TEMPLATE_FIELDS[name]))}")
    return PromptTemplate(name, text, source)


def default_template(name: str) -> PromptTemplate:
    """The packaged template ``name`` (``src/urbanarena/agents/prompts/<name>.txt``)."""
    if name not in TEMPLATE_FIELDS:
        raise PromptTemplateError(f"unknown prompt template {name!r}; known: {', '.join(TEMPLATE_FIELDS)}")
    text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    return _check(name, text, "package")


def template_from_file(name: str, path: str | Path) -> PromptTemplate:
    """Template ``name`` read from a user file.

    Raises:
        PromptTemplateError: missing/unreadable file, not UTF-8, bad placeholders.
    """
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PromptTemplateError(f"{p}: cannot read prompt template {name!r}: {e}") from e
    return _check(name, text, str(p))


def load_templates(names: tuple[str, ...] | list[str],
                   overrides: str | Path | Mapping[str, str | Path] | None = None) -> dict[str, PromptTemplate]:
    """Load ``names``: the packaged defaults, replaced by user files where given.

    Args:
        overrides: ``None``; a folder (``<folder>/<name>.txt`` replaces
            ``name`` when the file exists); or a mapping ``{name: file path}``.
    Raises:
        PromptTemplateError: a mapping names a template that is not among
            ``names``, the folder does not exist, or a file is invalid.
    """
    out = {n: default_template(n) for n in names}
    if overrides is None:
        return out
    if isinstance(overrides, Mapping):
        for n, path in overrides.items():
            if n not in out:
                raise PromptTemplateError(f"prompt template override for {n!r}: this agent uses {', '.join(names)}")
            out[n] = template_from_file(n, path)
        return out
    folder = Path(overrides).expanduser()
    if not folder.is_dir():
        raise PromptTemplateError(f"{folder}: prompt template folder not found")
    for n in names:
        f = folder / f"{n}.txt"
        if f.is_file():
            out[n] = template_from_file(n, f)
    return out


def templates_hash(templates: Mapping[str, PromptTemplate]) -> str:
    """One sha256 hex over ``{name: template sha256}`` (canonical JSON): the run's prompt-template hash."""
    doc = {n: t.sha256 for n, t in sorted(templates.items())}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


__all__ = [
    "ARENA_TEMPLATES", "CITYSEEKER_TEMPLATES", "URBANGROUND_TEMPLATES", "PromptTemplate", "PromptTemplateError",
    "TEMPLATE_FIELDS",
    "default_template", "load_templates", "template_from_file", "templates_hash",
]
