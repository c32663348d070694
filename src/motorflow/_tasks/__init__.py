"""Tasks: what the network must do (reach, center-out, delayed reach, posture).

Each kind is a config block (:class:`TaskConfig`'s subclasses) that draws its
training trials, lays out its evaluation trials, and says what the network sees and
where it must hold. :class:`Task` runs any kind: it adds the perturbations and the
replicate and batch dims. `TASKS` maps the config's ``kind`` names to their classes;
adding one is a module and one line here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from .._config_base import registry, tagged_union
from .._config_errors import ConfigError, config_error
from ._base import MAX_PERTURBATIONS, CenterOutConfig, TaskConfig
from ._delayed import DelayedReachConfig
from ._posture import PostureConfig
from ._reach import CenterOutTaskConfig, ReachConfig, WorkspaceTask
from ._runner import Task
from ._trials import CenterOut, Trials

TASKS: dict[str, type[TaskConfig]] = registry(
    ReachConfig, CenterOutTaskConfig, DelayedReachConfig, PostureConfig
)
"""Every task kind (a task's `kind`) to its config block."""
# One `tasks.<name>` block: a registered kind, chosen by its `kind` key (default reach).
AnyTaskConfig = tagged_union(list(TASKS.values()), default="reach")
_ADAPTER = pydantic.TypeAdapter(AnyTaskConfig)


def parse_task(data: Mapping[str, Any] | None, path: str = "") -> TaskConfig:
    """The task block of the kind `data` names (``reach`` when it names none)."""
    try:
        return _ADAPTER.validate_python({} if data is None else data)
    except pydantic.ValidationError as error:
        raise config_error(error, path, data) from None
    except ConfigError as error:
        raise ConfigError(f"{path}.{error.path}".strip("."), error.message) from None


__all__ = [
    "MAX_PERTURBATIONS",
    "TASKS",
    "AnyTaskConfig",
    "CenterOut",
    "CenterOutConfig",
    "CenterOutTaskConfig",
    "DelayedReachConfig",
    "PostureConfig",
    "ReachConfig",
    "Task",
    "TaskConfig",
    "Trials",
    "WorkspaceTask",
    "parse_task",
]
