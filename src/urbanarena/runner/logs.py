"""``RUN_DIR/run.log``: what happened during a run, in plain text, without secrets.

While :func:`urbanarena.runner.driver.execute` runs, the ``urbanarena``
logger (and so the model clients' retries, faults and warnings, and the
driver's own lines: start, each stored episode, stop) writes to
``RUN_DIR/run.log`` (appended across resumes) at level INFO. Worker
*processes* (``--backend processes``) do not log there; in-process and
thread backends do.

Every line passes :class:`RedactSecrets`: the value of every environment
variable whose name looks like a credential (``*API_KEY*``, ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``; values of at least 6 characters) is replaced by
``[redacted]`` before it is written, so not even an SDK error message that
quotes a key can leave it in the log.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from urbanarena.redact import redact_urls

LOG_FILE = "run.log"
LOGGER = "urbanarena"
_SECRET_NAME = re.compile(r"API_KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


def secret_values() -> list[str]:
    """Values of credential-like environment variables (see the module docstring), longest first."""
    vals = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and v and len(v) >= 6}
    return sorted(vals, key=len, reverse=True)


def redact(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every secret value, URL userinfo and secret-looking URL query value replaced by ``[redacted]``."""
    for s in secrets if secrets is not None else secret_values():
        text = text.replace(s, "[redacted]")
    return redact_urls(text)


class RedactSecrets(logging.Filter):
    """Formats the record's message and removes secret values from it (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
            record.exc_text = None
        record.msg = redact(msg)
        record.args = ()
        return True


class RunLog:
    """Attach ``RUN_DIR/run.log`` to the ``urbanarena`` logger for the duration of a run.

    Use as a context manager; the logger's level is restored on exit.
    """

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOG_FILE
        self.handler = logging.FileHandler(self.path, mode="a", encoding="utf-8")
        self.handler.setLevel(logging.INFO)
        self.handler.addFilter(RedactSecrets())
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"))
        self.logger = logging.getLogger(LOGGER)
        self._level = self.logger.level

    def __enter__(self) -> "RunLog":
        self.logger.addHandler(self.handler)
        if self.logger.level == logging.NOTSET or self.logger.level > logging.INFO:
            self.logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self._level)
        self.handler.close()


__all__ = ["LOG_FILE", "RedactSecrets", "RunLog", "redact", "secret_values"]
