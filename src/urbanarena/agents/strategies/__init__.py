"""Navigation strategies composable with any graph agent: backtracking (B1, B2, B3), cognitive maps
(C1, C2), memory retrieval (R1, R2, R3) and the route map of CitySeeker's map ablation (M1). ``urbanarena run ... --strategy B1,R3 --rounds n``;
see docs/strategies.md and :mod:`urbanarena.agents.strategies.compose`."""

from urbanarena.agents.strategies.base import Strategy, StrategyError, Walk
from urbanarena.agents.strategies.compose import (
    STRATEGIES, StrategyAgent, canonical_spec, check_applicable, compose, parse_strategies, strategies_config,
    strategy_factory,
)
from urbanarena.agents.strategies.memory import MEMORY_COLUMNS, MEMORY_DDL, MEMORY_TABLE, JobMemory, StrategyContext

__all__ = ["JobMemory", "MEMORY_COLUMNS", "MEMORY_DDL", "MEMORY_TABLE", "STRATEGIES", "Strategy", "StrategyAgent",
           "StrategyContext", "StrategyError", "Walk", "canonical_spec", "check_applicable", "compose",
           "parse_strategies", "strategies_config", "strategy_factory"]
