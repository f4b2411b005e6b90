"""Which strings may be node ids.

A node id reaches file names, log lines, HTML pages, terminal output and
prompts, so importers refuse ids that hold characters which hide or reorder
text there (ours; no source format states a rule):

* control characters (Unicode category ``Cc``: U+0000-U+001F, U+007F-U+009F,
  NUL, tab and line feed included);
* bidirectional formatting characters (the Unicode ``Bidi_Control`` property:
  U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), which let an id
  display as a different one ("Trojan Source", CVE-2021-42574);
* line and paragraph separators (U+2028, U+2029) and lone surrogates
  (U+D800-U+DFFF: not encodable as UTF-8, so such an id could never be saved).

Every other character stays valid: letters and digits of any script, spaces
inside an id, punctuation, emoji (joined by U+200D or not) and variation
selectors. An id must also be a non-empty string of at most :data:`MAX_NODE_ID_CHARS` characters.
"""

from __future__ import annotations

import re
from pathlib import Path

from urbanarena.errors import CityFormatError

#: characters refused in node ids (module docstring)
BAD_ID_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


#: longest node id (characters; ours: a frames city's ids are relative file paths, longer than a name)
MAX_NODE_ID_CHARS = 1024


def node_id_problem(node_id: object) -> str | None:
    """Why ``node_id`` is not a valid node id, or ``None`` when it is one."""
    if not isinstance(node_id, str):
        return f"node id must be a string, got {type(node_id).__name__}"
    if not node_id:
        return "empty node id"
    if len(node_id) > MAX_NODE_ID_CHARS:
        return f"node id of {len(node_id)} characters (at most {MAX_NODE_ID_CHARS}): {node_id[:40]!r}..."
    m = BAD_ID_CHARS.search(node_id)
    if m is not None:
        return f"node id {node_id!r} holds the control or bidirectional-formatting character U+{ord(m.group()):04X}"
    return None


def file_name_id_problem(node_id: object) -> str | None:
    """Why ``node_id`` cannot be a node id that is also a single file name (CitySeeker: an id is its panorama's
    file name), or ``None``: :func:`node_id_problem`, plus no ``/`` or ``\\`` and not ``.`` or ``..``, so that
    joined to the image folder it names a file inside it."""
    problem = node_id_problem(node_id)
    if problem is not None:
        return problem
    if "/" in node_id or "\\" in node_id or node_id in (".", ".."):  # type: ignore[operator]
        return f"node id {node_id!r} is not a plain file name (it holds a path separator or is '.' or '..')"
    return None


def check_node_id(node_id: object, path: str | Path | None, record: str | None) -> str:
    """Return ``node_id`` when it is a valid node id (module docstring).

    Raises:
        CityFormatError: naming ``path`` and ``record`` and the offending character.
    """
    problem = node_id_problem(node_id)
    if problem is not None:
        raise CityFormatError(path, record, problem)
    return node_id  # type: ignore[return-value]


__all__ = ["BAD_ID_CHARS", "MAX_NODE_ID_CHARS", "check_node_id", "file_name_id_problem", "node_id_problem"]
