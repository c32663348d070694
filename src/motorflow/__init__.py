"""motorflow: ensembles of recurrent controllers for motor tasks, in JAX/Equinox."""

from ._cells import AbstractCell, GRUCell, LeakyCell, VanillaCell
from ._checkpoint import Checkpoints
from ._config import (
    CenterOutConfig,
    ConfigError,
    FeedbackConfig,
    LossConfig,
    LossTermConfig,
    MechanicsConfig,
    ModelConfig,
    NetworkConfig,
    OptimizerConfig,
    ScheduleConfig,
    TaskConfig,
    TrainConfig,
    check_model_fits_task,
)
from ._ensemble import build_model, make_ensemble, n_replicates, replicate_keys, take_replicate
from ._evaluate import evaluate, rollout_ensemble
from ._feedback import FeedbackChannel
from ._history import empty_history, history_dataset, validation_steps
from ._io import load_ensemble, save_ensemble
from ._loop import ClosedLoop, Rollout
from ._losses import loss_terms, total_loss
from ._mechanics import MechanicsState, PointMass
from ._network import Network
from ._optim import learning_rate_schedule, make_optimizer
from ._tasks import CenterOut, ReachTask, Trials
from ._train import NonFiniteLossError, Trainer, TrainResult, TrainState, train
from ._trainable import trainable_filter

__all__ = [
    "AbstractCell",
    "CenterOut",
    "CenterOutConfig",
    "Checkpoints",
    "ClosedLoop",
    "ConfigError",
    "FeedbackChannel",
    "FeedbackConfig",
    "GRUCell",
    "LeakyCell",
    "LossConfig",
    "LossTermConfig",
    "MechanicsConfig",
    "MechanicsState",
    "ModelConfig",
    "Network",
    "NetworkConfig",
    "NonFiniteLossError",
    "OptimizerConfig",
    "PointMass",
    "ReachTask",
    "Rollout",
    "ScheduleConfig",
    "TaskConfig",
    "TrainConfig",
    "TrainResult",
    "TrainState",
    "Trainer",
    "Trials",
    "VanillaCell",
    "build_model",
    "check_model_fits_task",
    "empty_history",
    "evaluate",
    "history_dataset",
    "learning_rate_schedule",
    "load_ensemble",
    "loss_terms",
    "make_ensemble",
    "make_optimizer",
    "n_replicates",
    "replicate_keys",
    "rollout_ensemble",
    "save_ensemble",
    "take_replicate",
    "total_loss",
    "train",
    "trainable_filter",
    "validation_steps",
]
