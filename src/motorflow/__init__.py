"""motorflow: ensembles of recurrent controllers for motor tasks, in JAX/Equinox."""

from ._cells import AbstractCell, GRUCell, LeakyCell, VanillaCell
from ._checkpoint import Checkpoints, CheckpointStore, ForeignFilesError
from ._config import (
    CenterOutConfig,
    ConfigError,
    FeedbackConfig,
    LossConfig,
    LossTermConfig,
    ModelConfig,
    NetworkConfig,
    OptimizerConfig,
    PositionTermConfig,
    ScheduleConfig,
    TaskConfig,
    TrainConfig,
    check_model_fits_task,
)
from ._config_file import load_config_file
from ._devices import claim_gpus, use_devices, visible_gpus
from ._ensemble import build_model, make_ensemble, n_replicates, replicate_keys, take_replicate
from ._evaluate import evaluate, rollout_ensemble
from ._experiments import (
    Experiment,
    experiment_keys,
    resolve_experiment,
    resolve_experiments,
)
from ._job_settings import (
    flatten_settings,
    job_settings,
    parse_setting_params,
    rule_params,
    setting_param,
)
from ._feedback import FeedbackChannel
from ._figures import (
    comparison_summary,
    plot_comparison,
    plot_loss_history,
    plot_speed_profiles,
    plot_trajectories,
)
from ._history import empty_history, history_dataset, validation_steps
from ._io import load_ensemble, save_ensemble
from ._loop import ClosedLoop, Rollout
from ._losses import loss_terms, total_loss
from ._metrics import metrics_table, reach_metrics
from ._network import Network
from ._plant import (
    PLANTS,
    AbstractPlant,
    ArmConfig,
    MuscleArm,
    MuscleArmConfig,
    PlantConfig,
    PointMass,
    PointMassConfig,
    TwoLinkArm,
)
from ._optim import learning_rate_schedule, make_optimizer
from ._runtime import enable_compilation_cache, stage_logging
from ._stages import (
    comparison_figure,
    evaluate_experiment,
    experiment_figures,
    make_trials,
    train_experiment,
)
from ._store import (
    StoreError,
    center_out_dataset,
    open_dataset,
    read_center_out,
    read_states,
    read_trials,
    trials_dataset,
    write_dataset,
    write_trials,
)
from ._tasks import CenterOut, ReachTask, Trials
from ._identity import canonical_json, code_version, tree_digest
from ._train import (
    NonFiniteLossError,
    Trainer,
    TrainResult,
    TrainState,
    run_fingerprint,
    run_id,
    train,
)
from ._trainable import trainable_filter
from ._workflow_config import WorkflowConfig, check_name, config_json_schema, parse_config

__all__ = [
    "PLANTS",
    "AbstractPlant",
    "ArmConfig",
    "MuscleArm",
    "MuscleArmConfig",
    "PlantConfig",
    "PointMass",
    "PointMassConfig",
    "TwoLinkArm",
    "AbstractCell",
    "CenterOut",
    "CenterOutConfig",
    "CheckpointStore",
    "Checkpoints",
    "ClosedLoop",
    "ConfigError",
    "Experiment",
    "FeedbackChannel",
    "FeedbackConfig",
    "ForeignFilesError",
    "GRUCell",
    "LeakyCell",
    "LossConfig",
    "LossTermConfig",
    "ModelConfig",
    "Network",
    "NetworkConfig",
    "NonFiniteLossError",
    "OptimizerConfig",
    "PositionTermConfig",
    "ReachTask",
    "Rollout",
    "ScheduleConfig",
    "StoreError",
    "TaskConfig",
    "TrainConfig",
    "TrainResult",
    "TrainState",
    "Trainer",
    "Trials",
    "VanillaCell",
    "WorkflowConfig",
    "build_model",
    "canonical_json",
    "center_out_dataset",
    "check_model_fits_task",
    "check_name",
    "claim_gpus",
    "config_json_schema",
    "code_version",
    "comparison_figure",
    "comparison_summary",
    "empty_history",
    "enable_compilation_cache",
    "evaluate",
    "evaluate_experiment",
    "experiment_figures",
    "experiment_keys",
    "flatten_settings",
    "history_dataset",
    "learning_rate_schedule",
    "job_settings",
    "load_config_file",
    "load_ensemble",
    "loss_terms",
    "make_ensemble",
    "make_optimizer",
    "make_trials",
    "metrics_table",
    "n_replicates",
    "open_dataset",
    "parse_config",
    "parse_setting_params",
    "plot_comparison",
    "plot_loss_history",
    "plot_speed_profiles",
    "plot_trajectories",
    "reach_metrics",
    "read_center_out",
    "read_states",
    "read_trials",
    "replicate_keys",
    "resolve_experiment",
    "resolve_experiments",
    "rollout_ensemble",
    "rule_params",
    "run_fingerprint",
    "run_id",
    "save_ensemble",
    "setting_param",
    "stage_logging",
    "take_replicate",
    "total_loss",
    "train",
    "train_experiment",
    "trainable_filter",
    "tree_digest",
    "trials_dataset",
    "use_devices",
    "validation_steps",
    "visible_gpus",
    "write_dataset",
    "write_trials",
]
