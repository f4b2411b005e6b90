"""Running episodes durably and in parallel: episode loops (graph and arena), config hashing,
execution backends, the SQLite store, run metadata, summaries, exports and the dry-run estimate."""

from urbanarena.runner.arena import ArenaEpisodeRunner, ArenaViewSettings
from urbanarena.runner.config import EpisodeConfig, hash_config
from urbanarena.runner.dispatch import EpisodeDispatcher
from urbanarena.runner.driver import PreparedRun, RunOutcome, RunRequest, execute, prepare
from urbanarena.runner.episode import EpisodeRunner, RunStopped, run_episode
from urbanarena.runner.store import Store

__all__ = [
    "ArenaEpisodeRunner", "ArenaViewSettings", "EpisodeConfig", "EpisodeDispatcher", "hash_config", "PreparedRun",
    "RunOutcome", "RunRequest", "RunStopped", "execute", "prepare", "EpisodeRunner", "run_episode", "Store",
]
