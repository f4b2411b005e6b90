"""Break test round 3 (issue 29), items 11, 12, 15 and 17.

* a bad ``--cache-path`` (``/dev/null/x``, a file of random bytes, a directory, another program's SQLite
  file) fails preflight with exit 2 and creates no RUN_DIR (it passed, and every episode errored: exit 5);
* ``--max-steps`` above :data:`~urbanarena.runner.run_request.MAX_STEPS` is refused (``10**12`` ran for minutes);
* ``--dry-run`` never calls a ``module:Callable`` agent (a marker file was created), and says that importing
  the module runs its top-level code;
* ``--tokens`` files: a low-entropy token (``password1234567890123456``) is refused, and so are tokens of many
  characters built of words, keyboard walks or a repeated block (``PasswordPasswordPassword1``); a file its
  group or others may read is read with a warning.
"""

from __future__ import annotations

import math
import os
import sqlite3
import sys

import pytest
from typer.testing import CliRunner

from runner_util import write_inputs
from test_run_vlm_arena import make_inputs, run_args
from urbanarena.cli.main import app
from urbanarena.runner.driver import check_request
from urbanarena.runner.run_request import MAX_STEPS, RunRequest
from urbanarena.web.auth import AuthError, ParticipantTokens, pattern_bits, token_bits, token_problem

runner = CliRunner()


@pytest.fixture(scope="module")
def vlm_inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("preflight3"))


def _bad_cache(tmp_path, kind):
    if kind == "under /dev/null":
        return "/dev/null/x"
    if kind == "/dev/null":
        return "/dev/null"
    if kind == "random bytes":
        p = tmp_path / "random.sqlite"
        p.write_bytes(os.urandom(4096))
        return str(p)
    if kind == "directory":
        (tmp_path / "adir").mkdir()
        return str(tmp_path / "adir")
    if kind == "under a file":
        (tmp_path / "afile").write_text("x")
        return str(tmp_path / "afile" / "c.sqlite")
    p = tmp_path / "other.sqlite"  # "foreign sqlite"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE accounts (id INTEGER)")
    con.commit()
    con.close()
    return str(p)


@pytest.mark.parametrize("kind", ["under /dev/null", "/dev/null", "random bytes", "directory", "under a file",
                                  "foreign sqlite"])
def test_bad_cache_path_fails_preflight(vlm_inputs, tmp_path, monkeypatch, kind):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-not-used")
    city_dir, task_file = vlm_inputs
    out = tmp_path / "run"
    path = _bad_cache(tmp_path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    r = runner.invoke(app, [str(x) for x in run_args(city_dir, task_file, out, "http://127.0.0.1:9/v1",
                                                     "--cache-path", path)])
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error:") and "--cache-path" in r.output and "Traceback" not in r.output
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_good_cache_paths_pass_preflight(vlm_inputs, tmp_path, monkeypatch):
    """A new file in a new folder, an empty file and an earlier cache pass (a dry run: no request is sent)."""
    city_dir, task_file = vlm_inputs
    (tmp_path / "empty.sqlite").write_bytes(b"")
    con = sqlite3.connect(tmp_path / "old.sqlite")
    con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY)")
    con.commit()
    con.close()
    for path in (tmp_path / "new" / "dir" / "c.sqlite", tmp_path / "empty.sqlite", tmp_path / "old.sqlite"):
        r = runner.invoke(app, [str(x) for x in run_args(city_dir, task_file, tmp_path / "run",
                                                         "http://127.0.0.1:9/v1", "--cache-path", path, "--dry-run")])
        assert r.exit_code == 0, (path, r.output)


@pytest.mark.parametrize("steps", [MAX_STEPS + 1, 10**12, -1])
def test_max_steps_bounded(tmp_path, steps):
    city_dir, tasks, _, _ = write_inputs(tmp_path)
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks), "--agent", "random",
                            "--out", str(out), "--max-steps", str(steps)])
    assert r.exit_code == 2 and "--max-steps" in r.output and str(MAX_STEPS) in r.output, r.output
    assert not out.exists()


def test_max_steps_at_the_bound_passes(tmp_path):
    check_request(RunRequest(city="x", tasks="y", agent="random", out=tmp_path / "r", max_steps=MAX_STEPS))
    check_request(RunRequest(city="x", tasks="y", agent="random", out=tmp_path / "r", max_steps=0))


def test_max_steps_bound_in_help():
    r = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "0 to 10000" in r.output


AGENT_MODULE = '''
from pathlib import Path
Path({imported!r}).write_text("module imported")


def make_agent(**params):
    Path({called!r}).write_text("callable called")
    from urbanarena.agents.baselines import RandomAgent
    return RandomAgent()
'''


def test_dry_run_never_calls_an_import_path_agent(tmp_path, monkeypatch):
    city_dir, tasks, _, tf = write_inputs(tmp_path)
    imported, called = tmp_path / "imported.marker", tmp_path / "called.marker"
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "marker_agent_b29.py").write_text(AGENT_MODULE.format(imported=str(imported), called=str(called)))
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.delitem(sys.modules, "marker_agent_b29", raising=False)
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks), "--agent",
                            "marker_agent_b29:make_agent", "--out", str(out), "-p", "x=1", "--seeds", "3", "--dry-run"])
    assert r.exit_code == 0, r.output
    assert not called.exists()  # the callable was never called
    assert imported.exists()  # importing ran the module's top-level code, as the report says
    assert "importing runs the module's top-level code" in r.output and "not called" in r.output
    assert f"{len(tf.tasks) * 3} episodes would run" in r.output
    assert not out.exists()


def test_dry_run_import_path_errors_are_still_typed(tmp_path):
    city_dir, tasks, _, _ = write_inputs(tmp_path)
    for agent, match in (("no_such_module_b29:f", "cannot import module"), ("os:no_such_attr", "has no attribute"),
                         ("os:sep", "is not callable")):
        r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks), "--agent", agent,
                                "--out", str(tmp_path / "run"), "--dry-run"])
        assert r.exit_code == 2 and match in r.output, (agent, r.output)


# ------------------------------------------------------------------ tokens
def test_low_entropy_tokens_refused():
    # lower case + digits: 36 symbols; runs 123456789 (9) and 0123456 (7) cost 1 bit a character after their first
    per = math.log2(36)
    assert token_bits("password1234567890123456") == pytest.approx(8 * per + (per + 8) + (per + 6))
    assert "too weak" in token_problem("password1234567890123456")
    assert token_problem("Xq7-hT2_kPz9Lm4vRb8NcW1s") is None  # 24 characters of all classes: 144 bits


def _token_file(tmp_path, mode):
    import secrets

    f = tmp_path / "tokens.tsv"
    f.write_text(f"alice\t{secrets.token_urlsafe(32)}\n")
    f.chmod(mode)
    return f


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o666])
def test_readable_token_file_warns(tmp_path, mode):
    got: list[str] = []
    f = _token_file(tmp_path, mode)
    reg, toks = ParticipantTokens.load_or_issue(f, [], warn=got.append)
    assert list(toks) == ["alice"] and len(got) == 1
    assert str(f) in got[0] and f"{mode:04o}" in got[0] and "chmod 600" in got[0]


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_writable_token_file_warns_that_it_is_writable(tmp_path, mode):
    got: list[str] = []
    f = _token_file(tmp_path, mode)
    ParticipantTokens.load_or_issue(f, [], warn=got.append)
    assert len(got) == 1 and "is writable by its group or others" in got[0] and f"{mode:04o}" in got[0]


def test_private_token_file_no_warning(tmp_path, capsys):
    f = _token_file(tmp_path, 0o600)
    ParticipantTokens.load_or_issue(f, [])
    assert "warning" not in capsys.readouterr().err


def test_readable_token_file_warning_reaches_stderr(tmp_path, capsys):
    f = _token_file(tmp_path, 0o644)
    ParticipantTokens.load_or_issue(f, [])
    assert f"token file {f} is readable by its group or others" in capsys.readouterr().err


def test_weak_token_in_file_refused(tmp_path):
    f = tmp_path / "tokens.tsv"
    f.write_text("bob\tpassword1234567890123456\n")
    f.chmod(0o600)
    with pytest.raises(AuthError, match="the token of participant 'bob' is too weak"):
        ParticipantTokens.load_or_issue(f, [])


# tokens long enough to pass the alphabet estimate (token_bits >= 128) but built of what a guesser tries first
PATTERNED_TOKENS = [
    "PasswordPasswordPassword1",  # a repeated word: 25 characters of both cases, 150 bits by token_bits
    "passwordpasswordpasswordQx",
    "Password123Password123Password123x",
    "correcthorsebatterystaplecorrecthorsebattery",  # dictionary words, lower case: 44 x log2(26) = 207
    "qwertyuiopasdfghjklzxcvbnmQWERTYUIOP",  # keyboard rows
    "letmein_letmein_letmein_LETMEIN",
    "iloveyouiloveyou_Sunshine2024_Dragon",
]


@pytest.mark.parametrize("token", PATTERNED_TOKENS)
def test_patterned_tokens_refused_though_long(token, tmp_path):
    assert token_bits(token) >= 128  # the alphabet estimate alone let them through
    assert "is guessable" in token_problem(token)
    f = tmp_path / "tokens.tsv"
    f.write_text(f"carol\t{token}\n")
    f.chmod(0o600)
    with pytest.raises(AuthError, match="the token of participant 'carol' is guessable"):
        ParticipantTokens.load_or_issue(f, [])


def test_pattern_bits_prices_random_characters_like_token_bits():
    # a random-looking token with no word, walk or repeat of 5 characters: every character counts log2(64) = 6
    # bits, as in token_bits; appending the keyboard row "qwertyuiop" adds 60 bits to token_bits (10 x 6) but
    # fewer than 20 to pattern_bits (zxcvbn ranks it among the most common passwords)
    base = "Xq7-hT2_kPz9Lm4vRb8NcW1s"
    assert token_bits(base) == pytest.approx(24 * 6) and pattern_bits(base) == pytest.approx(24 * 6)
    assert token_bits(base + "qwertyuiop") == pytest.approx(34 * 6)
    assert 24 * 6 < pattern_bits(base + "qwertyuiop") < 24 * 6 + 20


def test_overlong_token_refused():
    import secrets

    token = secrets.token_urlsafe(120)  # 160 characters
    assert "160 characters long, 128 at most" in token_problem(token)
    assert token_problem(token[:128]) is None
