"""Issue 27 item 1: CI executes README's two set-up commands as README writes them, each in a fresh venv.

``.ci/run`` reads both commands from README.md through ``.ci/readme_command.py`` instead of repeating them, so
they cannot drift; these tests check that the extractor finds exactly README's blocks (against a hand-written
README), that it fails loudly when a block is missing, doubled or split over lines, and that ``.ci/run`` runs
what it prints, in venvs it creates, and never installs or runs pytest on the interpreter outside them."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("readme_command", ROOT / ".ci" / "readme_command.py")
rc = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(rc)

FIRST = 'python3 -m pip install -c constraints.txt -e ".[all]" && urbanarena demo'
TEST = 'python3 -m pip install -c constraints.txt -e ".[all,test]" && python3 -m pytest -q'


def _readme(*blocks: str) -> str:
    return "# x\n\ntext\n\n" + "\n\nmore text\n\n".join(f"```bash\n{b}\n```" for b in blocks) + "\n"


def test_extracts_both_commands_from_a_hand_written_readme():
    text = _readme("urbanarena run --help", FIRST, "urbanarena summary runs/x", TEST)
    assert rc.command("first", text) == FIRST
    assert rc.command("test", text) == TEST


@pytest.mark.parametrize("text, which", [
    (_readme(TEST), "first"),                       # missing
    (_readme(FIRST, FIRST, TEST), "first"),         # twice
    (_readme(FIRST, TEST.replace(" && ", " &&\n")), "test"),  # split over two lines
])
def test_a_missing_doubled_or_split_command_is_an_error(text, which):
    with pytest.raises(ValueError, match="README.md"):
        rc.command(which, text)


def test_the_real_readme_holds_both_and_the_script_prints_them():
    out = {w: subprocess.run([sys.executable, str(ROOT / ".ci" / "readme_command.py"), w],
                             capture_output=True, text=True, check=True).stdout.strip() for w in ("first", "test")}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for cmd in out.values():
        assert f"```bash\n{cmd}\n```" in readme
    assert out["first"].endswith("&& urbanarena demo") and out["test"].endswith("&& python3 -m pytest -q")


def test_ci_runs_the_extracted_commands_in_fresh_venvs_only():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'FIRST_CMD="$(python3 .ci/readme_command.py first)"' in ci
    assert 'TEST_CMD="$(python3 .ci/readme_command.py test)"' in ci
    runs = re.findall(r'source "\$CI_TMP/([\w-]+)/bin/activate" && .*bash -euo pipefail -c "\$(\w+)"', ci)
    assert sorted(runs) == [("first-venv", "FIRST_CMD"), ("test-venv", "TEST_CMD")]
    assert ci.count('fresh_venv "$CI_TMP/first-venv"') == 1 and ci.count('fresh_venv "$CI_TMP/test-venv"') == 1
    # nothing is installed into, and no tests run on, the interpreter outside the venvs (pip's own upgrade aside)
    bare = [ln for ln in ci.splitlines() if re.match(r"\s*python3 -m (pip install(?! --upgrade pip)|pytest)", ln)]
    assert bare == []
