"""inspect_ai entry point (``[project.entry-points.inspect_ai]``): importing it registers the
urbanarena tasks, so ``inspect eval urbanarena/suite`` finds them (:mod:`.inspect_tasks`)."""

from urbanarena.harness.inspect_tasks import suite

__all__ = ["suite"]
