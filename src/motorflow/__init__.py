"""motorflow: ensembles of recurrent controllers for motor tasks, in JAX/Equinox.

This namespace is the science: models, plants, tasks, perturbations, losses,
training, learning rules, analyses and figures. What runs the Snakemake workflow
(stages, stores, job settings, devices, logging, the CLI) is :mod:`motorflow.pipeline`.

Families of interchangeable parts are private sub-packages, each a small interface in
``_base.py``, a module per member and a registry the config and its schema read. Every
member is chosen by its name in the config (a `kind`, or a key), its class's ``KIND``
(a config block of several kinds takes it from its `kind` field), and every registry is
built the same way, ``registry(member, ...)``: kind -> class. A member that is a
part of the model's pytree (a cell, a plant) is the Equinox module its config block
builds; a metric, which has no settings, is a plain class; any other member is its
config block itself, carrying its behaviour. The families: cells (``_cells``,
`CELLS`), plants (``_plants``, `PLANTS`), perturbations (``_perturbations``,
`PERTURBATIONS`), tasks (``_tasks``, `TASKS`), loss terms (``_losses``,
`LOSS_TERMS`), learning rules (``_training/rules``, `LEARNING_RULES`), weight
constraints (``_training/constraints``, `CONSTRAINTS`) and update rules
(``_training/update_rules``, `UPDATE_RULES`), reach metrics (``_metrics``, `METRICS`)
and hidden-state analyses (``_analysis``, `ANALYSES`). What differs between members
(a perturbation's label in figures, a plant's memory constants, a cell's weights that
e-prop trains, an analysis's checks of the config) is a method or class attribute of
the member, never a switch on its `kind` elsewhere. Adding a member to any of them
is three files: its module (each setting with its ``Field(description=...)``), its line
in the registry and its tests. Two generated files then change, and the tests fail
until they are regenerated: ``python -m motorflow schema >
workflow/schemas/config.schema.yaml`` rewrites the schema and ``python -m motorflow
docs`` config/README.md's key tables (a new kind gets its section there). An analysis
adds a fourth file, its figure's caption (workflow/report/<name>.rst); the workflow
draws its figure from the registry.
A perturbation with a new kind of effect, or a learning rule that needs a new rollout
hook, also touches the loop (``_model/_loop.py``: ``Effects``, :class:`RolloutOptions`).
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_names

# The names below load on first use (motorflow._lazy): importing the package is cheap.
if TYPE_CHECKING:
    from ._analysis._base import AbstractAnalysis, AnalysisInputs
    from ._analysis._condition_sweep import condition_sweep, condition_sweep_table
    from ._analysis._config import ANALYSES, AnalysisConfig, StatisticsConfig
    from ._analysis._fixed_points import (
        FixedPointsAnalysis,
        find_fixed_points,
        sample_starts,
        steady_inputs,
    )
    from ._analysis._jpca import JPCAAnalysis, hidden_jpca
    from ._analysis._output_spaces import OutputSpacesAnalysis, output_spaces
    from ._analysis._pca import PCAAnalysis, hidden_pca
    from ._analysis._replicate_values import replicate_values
    from ._analysis._statistics import bootstrap_interval, summarise, summary_table
    from ._analysis._tuning import TuningAnalysis, directional_tuning
    from ._cells import (
        CELLS,
        AbstractCell,
        CellConfig,
        GRUCell,
        GRUConfig,
        LeakyCell,
        LeakyConfig,
        ReservoirCell,
        ReservoirConfig,
        VanillaCell,
        VanillaConfig,
    )
    from ._config import FeedbackConfig, ModelConfig, NetworkConfig, check_model_fits_task
    from ._config_errors import ConfigError, ConfigErrors
    from ._evaluate import condition_trials, evaluate, rollout_ensemble
    from ._figures import (
        curve_interval,
        diverged_replicates,
        plot_arm_postures,
        plot_comparison,
        plot_condition_sweep,
        plot_fixed_points,
        plot_jpca,
        plot_loss_history,
        plot_pca_trajectories,
        plot_protocol,
        plot_speed_profiles,
        plot_sweep,
        plot_trajectories,
        plot_tuning,
        plot_tuning_comparison,
        protocol_curve,
        protocol_summary,
    )
    from ._losses import (
        LOSS_TERMS,
        AbstractLossTerm,
        EffortTerm,
        FinalVelocityTerm,
        HiddenTerm,
        HoldTerm,
        LossConfig,
        PositionTerm,
        loss_terms,
        total_loss,
    )
    from ._metrics import METRICS, AbstractMetric, metrics_table, reach_metrics
    from ._model._ensemble import (
        build_model,
        make_ensemble,
        n_replicates,
        replicate_keys,
        take_replicate,
    )
    from ._model._episode import Targets, run_trial, run_trials
    from ._model._feedback import FeedbackChannel
    from ._model._loop import ClosedLoop, Rollout, RolloutOptions
    from ._model._network import Network
    from ._model._saved_ensembles import (
        adopt_weights,
        load_ensemble,
        load_optimizer_state,
        load_training_record,
        save_ensemble,
    )
    from ._perturbations import (
        PERTURBATIONS,
        AbstractPerturbation,
        Clamp,
        ConstantField,
        CurlField,
        Effects,
        FeedbackOffset,
        ForcePulse,
        Lesion,
        Stimulation,
        TargetJump,
        TrialGeometry,
        UnitEffects,
        UnitNoise,
        ViscousField,
        draw_conditions,
        draw_params,
        total_effects,
    )
    from ._plants import (
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
    from ._tasks import (
        TASKS,
        CenterOut,
        CenterOutConfig,
        CenterOutTaskConfig,
        DelayedReachConfig,
        PostureConfig,
        ReachConfig,
        Task,
        TaskConfig,
        Trials,
        WorkspaceTask,
    )
    from ._training._config import OptimizerConfig, ScheduleConfig, TrainConfig
    from ._training._divergence import NonFiniteLossError
    from ._training._driver import TrainResult, train
    from ._training._history import empty_history, history_dataset
    from ._training._optimizer import learning_rate_schedule, make_optimizer
    from ._training._packs import train_pack
    from ._training._plan import TrainingPlan
    from ._training._schedule import BatchSchedule, ExponentialSpacing, TimedSchedule
    from ._training._state import BatchRecords, TrainState
    from ._training._trainable import trainable_filter
    from ._training._trainer import Trainer
    from ._training.constraints import CONSTRAINTS, AbstractConstraint, Constraints
    from ._training.rules import (
        BPTT,
        LEARNING_RULES,
        RLS,
        AbstractLearningRule,
        EProp,
        TruncatedBPTT,
    )
    from ._training.update_rules import UPDATE_RULES, AbstractUpdateRule, UpdateRules

__getattr__, __dir__ = lazy_names(__name__)

__all__ = [
    "ANALYSES",
    "BPTT",
    "CELLS",
    "CONSTRAINTS",
    "LEARNING_RULES",
    "LOSS_TERMS",
    "METRICS",
    "PERTURBATIONS",
    "PLANTS",
    "RLS",
    "TASKS",
    "UPDATE_RULES",
    "AbstractAnalysis",
    "AbstractCell",
    "AbstractConstraint",
    "AbstractLearningRule",
    "AbstractLossTerm",
    "AbstractMetric",
    "AbstractPerturbation",
    "AbstractPlant",
    "AbstractUpdateRule",
    "AnalysisConfig",
    "AnalysisInputs",
    "ArmConfig",
    "BatchRecords",
    "BatchSchedule",
    "CellConfig",
    "CenterOut",
    "CenterOutConfig",
    "CenterOutTaskConfig",
    "Clamp",
    "ClosedLoop",
    "ConfigError",
    "ConfigErrors",
    "ConstantField",
    "Constraints",
    "CurlField",
    "DelayedReachConfig",
    "EProp",
    "Effects",
    "EffortTerm",
    "ExponentialSpacing",
    "FeedbackChannel",
    "FeedbackConfig",
    "FeedbackOffset",
    "FinalVelocityTerm",
    "FixedPointsAnalysis",
    "ForcePulse",
    "GRUCell",
    "GRUConfig",
    "HiddenTerm",
    "HoldTerm",
    "JPCAAnalysis",
    "LeakyCell",
    "LeakyConfig",
    "Lesion",
    "LossConfig",
    "ModelConfig",
    "MuscleArm",
    "MuscleArmConfig",
    "Network",
    "NetworkConfig",
    "NonFiniteLossError",
    "OptimizerConfig",
    "OutputSpacesAnalysis",
    "PCAAnalysis",
    "PlantConfig",
    "PointMass",
    "PointMassConfig",
    "PositionTerm",
    "PostureConfig",
    "ReachConfig",
    "ReservoirCell",
    "ReservoirConfig",
    "Rollout",
    "RolloutOptions",
    "ScheduleConfig",
    "StatisticsConfig",
    "Stimulation",
    "TargetJump",
    "Targets",
    "Task",
    "TaskConfig",
    "TimedSchedule",
    "TrainConfig",
    "TrainResult",
    "TrainState",
    "Trainer",
    "TrainingPlan",
    "TrialGeometry",
    "Trials",
    "TruncatedBPTT",
    "TuningAnalysis",
    "TwoLinkArm",
    "UnitEffects",
    "UnitNoise",
    "UpdateRules",
    "VanillaCell",
    "VanillaConfig",
    "ViscousField",
    "WorkspaceTask",
    "adopt_weights",
    "bootstrap_interval",
    "build_model",
    "check_model_fits_task",
    "condition_sweep",
    "condition_sweep_table",
    "condition_trials",
    "curve_interval",
    "directional_tuning",
    "diverged_replicates",
    "draw_conditions",
    "draw_params",
    "empty_history",
    "evaluate",
    "find_fixed_points",
    "hidden_jpca",
    "hidden_pca",
    "history_dataset",
    "learning_rate_schedule",
    "load_ensemble",
    "load_optimizer_state",
    "load_training_record",
    "loss_terms",
    "make_ensemble",
    "make_optimizer",
    "metrics_table",
    "n_replicates",
    "output_spaces",
    "plot_arm_postures",
    "plot_comparison",
    "plot_condition_sweep",
    "plot_fixed_points",
    "plot_jpca",
    "plot_loss_history",
    "plot_pca_trajectories",
    "plot_protocol",
    "plot_speed_profiles",
    "plot_sweep",
    "plot_trajectories",
    "plot_tuning",
    "plot_tuning_comparison",
    "protocol_curve",
    "protocol_summary",
    "reach_metrics",
    "replicate_keys",
    "replicate_values",
    "rollout_ensemble",
    "run_trial",
    "run_trials",
    "sample_starts",
    "save_ensemble",
    "steady_inputs",
    "summarise",
    "summary_table",
    "take_replicate",
    "total_effects",
    "total_loss",
    "train",
    "train_pack",
    "trainable_filter",
]
