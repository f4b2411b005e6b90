"""Issue 15, defects 5 and 10: ``summary`` shows how many steps took a protocol's fallback action (they were in
traces only) and how many replies needed a lenient reading: summed from each episode's ``agent_stats``
(hand-made rows)."""

from __future__ import annotations

from urbanarena.runner.summary import describe_faults, fault_counts


def test_fallback_steps_are_counted_and_described():
    rows = [
        {"agent_stats": {"requests": 5, "fallbacks": {"stop": 2, "choice": 1}}},
        {"agent_stats": {"requests": 3, "fallbacks": {"stop": 0, "choice": 4}}},
        {"agent_stats": {"requests": 7, "parse_error_steps": 3,  # an arena agent's consumed parse errors
                         "repairs": {"code_fence": 2, "surrounding_text": 1}}},
        {"agent_stats": {"acts": 3}},  # no model: not counted
    ]
    f = fault_counts(rows)
    assert f["fallbacks"] == {"choice": 5, "parse_error_steps": 3, "stop": 2} and f["fallback_total"] == 10
    assert f["episodes"] == 3
    line = describe_faults(f)
    assert "fallback actions 10 (choice 5, parse_error_steps 3, stop 2)" in line
    # the replies cityarena-v1's reference parser would have refused are counted too
    assert f["repairs"] == {"code_fence": 2, "surrounding_text": 1}
    assert "lenient readings 3 (code_fence 2, surrounding_text 1)" in line
    assert describe_faults(fault_counts([{"agent_stats": {"requests": 1}}])) is None
