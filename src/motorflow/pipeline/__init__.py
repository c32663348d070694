"""What runs the workflow: stages, stores, checkpoints, run identities and preemption,
job settings, experiments and sweeps, the workflow config and its loader, devices,
logging, export and the command line.

The Snakemake scripts call these; the science they run is :mod:`motorflow`'s.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

# The names below load on first use (motorflow._lazy): importing the package is cheap.
if TYPE_CHECKING:
    from .._identity import canonical_json, code_version, tree_digest
    from .._training._checkpoint import Checkpoints, CheckpointStore, ForeignFilesError
    from .._training._preemption import TrainingPreempted
    from .._training._run_identity import run_fingerprint, run_id
    from ._analysis_stages import (
        analyse_experiment,
        analysis_comparison,
        analysis_figures,
        condition_sweep_stage,
        summary_stage,
    )
    from ._check import CheckedConfig, check_config, read_config
    from ._condition_sweeps import condition_sweep_axis, condition_sweep_points
    from ._config_file import load_config_file
    from ._config_names import check_name
    from ._config_schema import config_json_schema
    from ._cross_experiment_specs import SweepSpec
    from ._datasets import StoreError, open_dataset, read_states, write_dataset
    from ._describe import describe_experiment
    from ._devices import claim_gpus, use_devices, visible_gpus
    from ._estimate import Estimate, estimate
    from ._experiment_checks import drawn_experiments
    from ._experiments import (
        RESERVED_NAMES,
        Experiment,
        experiment_keys,
        resolve_experiment,
        resolve_experiments,
    )
    from ._figure_stages import (
        arm_figure,
        comparison_figure,
        experiment_figures,
        protocol_figure,
        sweep_figure,
    )
    from ._grid import grid_point_names
    from ._invocation import job_invocation, note_workflow_command
    from ._job import (
        UNNAMED_FILE,
        PackMember,
        describe_job,
        describe_pack,
        job_client,
        job_command,
    )
    from ._job_argument import job_argument
    from ._job_settings import (
        evaluate_job_settings,
        flatten_settings,
        is_arm,
        job_run_settings,
        job_settings,
        pack_job_experiments,
        pack_params,
        pack_run_settings,
        protocol_curve_stages,
        rule_params,
        setting_param,
        train_job_experiment,
    )
    from ._last_complete import drop_last_complete, keep_last_complete, last_complete_message
    from ._names_pattern import names_pattern
    from ._preflight import pack_memory, preflight
    from ._results_folder import (
        RESULTS_ROOT,
        check_results_owner,
        mark_results_owner,
        results_folder,
    )
    from ._runtime import enable_compilation_cache, stage_logging
    from ._setting_params import SETTING_PARAM_PREFIX, parse_setting_params
    from ._stages import (
        evaluate_experiment,
        evaluate_snapshots,
        make_trials,
    )
    from ._store import (
        center_out_dataset,
        read_center_out,
        read_trials,
        trials_dataset,
        write_trials,
    )
    from ._sweep_size import EACH_EXPERIMENT_UP_TO, shows_each_experiment
    from ._sweeps import grid_points
    from ._train_packs import stage_packs, train_packs
    from ._train_stage import TrainJob, train_experiment, train_experiments
    from ._warm_workers import WarmWorkers, start_warm_workers
    from ._workflow_config import EvaluationConfig, WorkflowConfig, parse_config
    from ._workflow_run import WorkflowRun, config_problems, ignore_cluster_warning

__getattr__, __dir__ = lazy_names(__name__)

__all__ = [
    "EACH_EXPERIMENT_UP_TO",
    "RESERVED_NAMES",
    "RESULTS_ROOT",
    "SETTING_PARAM_PREFIX",
    "UNNAMED_FILE",
    "CheckedConfig",
    "CheckpointStore",
    "Checkpoints",
    "Estimate",
    "EvaluationConfig",
    "Experiment",
    "ForeignFilesError",
    "PackMember",
    "StoreError",
    "SweepSpec",
    "TrainJob",
    "TrainingPreempted",
    "WarmWorkers",
    "WorkflowConfig",
    "WorkflowRun",
    "analyse_experiment",
    "analysis_comparison",
    "analysis_figures",
    "arm_figure",
    "canonical_json",
    "center_out_dataset",
    "check_config",
    "check_name",
    "check_results_owner",
    "claim_gpus",
    "code_version",
    "comparison_figure",
    "condition_sweep_axis",
    "condition_sweep_points",
    "condition_sweep_stage",
    "config_json_schema",
    "config_problems",
    "describe_experiment",
    "describe_job",
    "describe_pack",
    "drawn_experiments",
    "drop_last_complete",
    "enable_compilation_cache",
    "estimate",
    "evaluate_experiment",
    "evaluate_job_settings",
    "evaluate_snapshots",
    "experiment_figures",
    "experiment_keys",
    "flatten_settings",
    "grid_point_names",
    "grid_points",
    "ignore_cluster_warning",
    "is_arm",
    "job_argument",
    "job_client",
    "job_command",
    "job_invocation",
    "job_run_settings",
    "job_settings",
    "keep_last_complete",
    "last_complete_message",
    "load_config_file",
    "make_trials",
    "mark_results_owner",
    "names_pattern",
    "note_workflow_command",
    "open_dataset",
    "pack_job_experiments",
    "pack_memory",
    "pack_params",
    "pack_run_settings",
    "parse_config",
    "parse_setting_params",
    "preflight",
    "protocol_curve_stages",
    "protocol_figure",
    "read_center_out",
    "read_config",
    "read_states",
    "read_trials",
    "resolve_experiment",
    "resolve_experiments",
    "results_folder",
    "rule_params",
    "run_fingerprint",
    "run_id",
    "setting_param",
    "shows_each_experiment",
    "stage_logging",
    "stage_packs",
    "start_warm_workers",
    "summary_stage",
    "sweep_figure",
    "train_experiment",
    "train_experiments",
    "train_job_experiment",
    "train_packs",
    "tree_digest",
    "trials_dataset",
    "use_devices",
    "visible_gpus",
    "write_dataset",
    "write_trials",
]
