"""Navigation metrics: small pure functions (see each docstring for formula and source).

:data:`METRIC_KEYS` are the per-episode keys every navigation scorer returns
(``None`` where a metric does not apply) and the keys of ``summary --json``.
Rates are stored per episode as 0/1 (``spl``, ``ndtw``, ``sdtw`` in [0, 1]) and
reported x100 in summaries.
"""

METRIC_KEYS: tuple[str, ...] = (
    "tc_exact",
    "tc_proximity_40m",
    "tc_proximity_50m",
    "tc_proximity_60m",
    "tc_category",
    "spl",
    "goal_dist_m",
    "spd_cityseeker",
    "spd_m",
    "ndtw",
    "sdtw",
    "dtw_m",
    "avg_steps",
    "tc",
    "spd_hops",
    "sed",
)

#: keys reported in percent (x100) by summaries
PERCENT_KEYS: frozenset[str] = frozenset(
    {"tc_exact", "tc_proximity_40m", "tc_proximity_50m", "tc_proximity_60m", "tc_category", "spl", "ndtw", "sdtw", "tc", "sed"}
)
