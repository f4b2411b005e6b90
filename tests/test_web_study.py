"""Study mechanics of ``urbanarena play`` without a server: the Williams order (counted against its
defining properties), the landmark-variant rule, practice split, bind rule, tokens and path confinement."""

from __future__ import annotations

import os
import stat
from collections import Counter
from itertools import permutations

import pytest

from urbanarena.tasks.schema import Task
from urbanarena.web.auth import AuthError, ParticipantTokens, bearer_token, check_bind, is_loopback
from urbanarena.web.files import confined_file
from urbanarena.web.study import (
    StudyError,
    StudyPlan,
    landmark_key,
    participant_order,
    separate_variants,
    split_practice,
    williams_row,
)


def _task(tid: str, kind: str, poi: str | None = None) -> Task:
    extra = {"task_kind": kind, **({"poi_id": poi} if poi else {})}
    return Task.model_validate({"task_id": tid, "family": "cityarena", "city": {"name": "c"}, "start": {"node": "a"},
                                "instruction": tid,
                                "extra": extra})


# ------------------------------------------------------------- Williams design
def test_williams_first_rows_hand_worked():
    # n = 4: first row 0 1 3 2 (Williams 1949); row r adds r mod 4
    assert williams_row(4, 0) == [0, 1, 3, 2]
    assert williams_row(4, 1) == [1, 2, 0, 3]
    assert williams_row(4, 5) == williams_row(4, 1)  # period n for even n
    # n = 3: first row 0 1 2; rows 3..5 are rows 0..2 reversed
    assert williams_row(3, 0) == [0, 1, 2]
    assert williams_row(3, 1) == [1, 2, 0]
    assert williams_row(3, 4) == [0, 2, 1]  # row 1 reversed


@pytest.mark.parametrize("n", [2, 4, 6, 8])
def test_williams_even_is_balanced_latin_square(n):
    rows = [williams_row(n, r) for r in range(n)]
    assert all(sorted(r) == list(range(n)) for r in rows)
    for pos in range(n):  # every task at every position once
        assert sorted(r[pos] for r in rows) == list(range(n))
    pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    assert set(pairs) == set(permutations(range(n), 2)) and set(pairs.values()) == {1}


@pytest.mark.parametrize("n", [3, 5, 7])
def test_williams_odd_needs_two_squares(n):
    rows = [williams_row(n, r) for r in range(2 * n)]
    for pos in range(n):
        assert Counter(r[pos] for r in rows) == {t: 2 for t in range(n)}
    pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    assert set(pairs) == set(permutations(range(n), 2)) and set(pairs.values()) == {2}


# ------------------------------------------------------------- landmark variants
def test_landmark_key_only_for_landmark_search():
    assert landmark_key(_task("a", "landmark_language", "n501")) == "poi_id:n501"
    assert landmark_key(_task("b", "landmark_image", "n501")) == "poi_id:n501"
    assert landmark_key(_task("c", "vln", "n501")) is None


def _adjacent_variants(tasks):
    return [(a.task_id, b.task_id) for a, b in zip(tasks, tasks[1:])
            if landmark_key(a) is not None and landmark_key(a) == landmark_key(b)]


def test_variants_never_back_to_back_for_any_participant():
    tasks = [_task("L1-lang", "landmark_language", "p1"), _task("L1-img", "landmark_image", "p1"),
             _task("L2-lang", "landmark_language", "p2"), _task("L2-img", "landmark_image", "p2"),
             _task("count", "object_count"), _task("vln", "vln", "p3")]
    # the unrepaired Williams row 0 puts L1-lang right before L1-img
    assert williams_row(6, 0)[:2] == [0, 1]
    seen_first = set()
    for i in range(24):
        order = participant_order(tasks, i)
        assert sorted(t.task_id for t in order) == sorted(t.task_id for t in tasks)
        assert _adjacent_variants(order) == []
        seen_first.add(order[0].task_id)
    assert len(seen_first) == 6  # the order still varies between participants


def test_unseparable_variants_are_refused():
    tasks = [_task("L1-lang", "landmark_language", "p1"), _task("L1-img", "landmark_image", "p1")]
    with pytest.raises(StudyError, match="variants of one landmark"):
        separate_variants([0, 1], tasks)
    with pytest.raises(StudyError):
        StudyPlan(tasks, time_limit_s=None).check(1)


def test_practice_split_and_plan_checks():
    tasks = [_task(f"t{i}", "object_count") for i in range(4)]
    scored, prac = split_practice(tasks, None, 1)
    assert [t.task_id for t in prac] == ["t0"] and [t.task_id for t in scored] == ["t1", "t2", "t3"]
    scored, prac = split_practice(tasks, [tasks[2]], 5)
    assert [t.task_id for t in prac] == ["t2"] and [t.task_id for t in scored] == ["t0", "t1", "t3"]
    with pytest.raises(StudyError):
        split_practice(tasks, None, 4)
    with pytest.raises(StudyError):
        StudyPlan(scored, time_limit_s=0)
    assert len(StudyPlan(tasks, per_participant=2).order_for(3)) == 2


# ------------------------------------------------------------- bind rule and tokens
@pytest.mark.parametrize("host", ["127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost"])
def test_loopback_hosts_bind_without_public(host):
    assert is_loopback(host)
    check_bind(host, public=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "example.org"])
def test_non_loopback_needs_public(host):
    assert not is_loopback(host)
    with pytest.raises(AuthError, match="not a loopback address"):
        check_bind(host, public=False)
    check_bind(host, public=True)


def test_tokens_issue_check_and_file(tmp_path):
    reg, tokens = ParticipantTokens.issue(["alice", "bob"])
    assert len(set(tokens.values())) == 2 and all(len(t) >= 40 for t in tokens.values())
    assert reg.participant_for(tokens["alice"]) == "alice" and reg.participant_for(tokens["bob"]) == "bob"
    assert reg.participant_for(tokens["alice"] + "x") is None and reg.participant_for("") is None
    assert reg.participants == ["alice", "bob"]
    with pytest.raises(AuthError):
        ParticipantTokens.issue(["../etc"])
    with pytest.raises(AuthError):
        ParticipantTokens.issue(["a", "a"])
    f = tmp_path / "tokens.tsv"
    reg1, t1 = ParticipantTokens.load_or_issue(f, ["alice"])
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    reg2, t2 = ParticipantTokens.load_or_issue(f, ["bob"])  # alice kept, bob added
    assert t2["alice"] == t1["alice"] and reg2.participants == ["alice", "bob"]
    assert reg2.participant_for(t1["alice"]) == "alice"
    f.write_text("alice no-tab-here\n")
    with pytest.raises(AuthError, match="line 1"):
        ParticipantTokens.load_or_issue(f, [])
    assert bearer_token("Bearer abc") == "abc" and bearer_token("Basic abc") is None and bearer_token(None) is None


# ------------------------------------------------------------- path confinement
def test_confined_file(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "ok.txt").write_text("ok")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert confined_file(root, "sub/ok.txt") == (root / "sub" / "ok.txt").resolve()
    for bad in ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", str(tmp_path / "secret.txt"), "sub//ok.txt",
                "./sub/ok.txt", "sub\\ok.txt", "sub/ok.txt\x00", ".hidden", "link.txt", "", "sub", "C:/x",
                "sub/./ok.txt"]:
        assert confined_file(root, bad) is None, bad
