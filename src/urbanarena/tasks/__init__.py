"""Tasks: the task-file schema, task families (episodes, importers, scorers) and metrics."""

from urbanarena.tasks.schema import Goal, Start, Task, TaskFile, CityRef

__all__ = ["Goal", "Start", "Task", "TaskFile", "CityRef"]
