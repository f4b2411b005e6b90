"""Print one of README.md's two set-up commands, exactly as README writes it, for ``.ci/run`` to execute.

``first``: the bash block that installs and runs the main job (``... -e ".[all]" && urbanarena demo``);
``test``: the bash block that installs and runs the tests (``... -e ".[all,test]" && python3 -m pytest -q``).
``.ci/run`` runs what this prints, so CI cannot drift from the README; this exits 1 (naming what it
looked for) when README holds no such block or more than one, so a README edit that breaks the
commands fails CI instead of being skipped.

Usage: python3 .ci/readme_command.py first|test [README]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# what identifies each block (the start of the single line a block must hold)
MARKERS = {
    "first": ("python3 -m pip install", '".[all]"', "&& urbanarena demo"),
    "test": ("python3 -m pip install", '".[all,test]"', "&& python3 -m pytest -q"),
}


def bash_blocks(text: str) -> list[str]:
    """The bodies of README's fenced ```bash blocks, stripped."""
    return [m.group(1).strip() for m in re.finditer(r"```bash\n(.*?)```", text, flags=re.S)]


def command(which: str, text: str) -> str:
    """The one bash block holding every marker of ``which``; ValueError when none or several do, or when
    that block is not a single line."""
    marks = MARKERS[which]
    found = [b for b in bash_blocks(text) if all(m in b for m in marks)]
    if len(found) != 1:
        raise ValueError(f"README.md: expected exactly one bash block with {' ... '.join(marks)}, found {len(found)}")
    block = found[0]
    if "\n" in block:
        raise ValueError(f"README.md: the {which} command must be one line, found:\n{block}")
    return block


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[1] not in MARKERS:
        print(__doc__, file=sys.stderr)
        return 2
    readme = Path(argv[2]) if len(argv) == 3 else Path(__file__).resolve().parent.parent / "README.md"
    try:
        print(command(argv[1], readme.read_text(encoding="utf-8")))
    except ValueError as e:
        print(f"readme_command: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
