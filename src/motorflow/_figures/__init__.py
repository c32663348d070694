"""Figures, one module per family: training losses, reaches, protocols, arm postures,
hidden states, comparisons across experiments and sweeps (:mod:`._style` holds what
they share)."""

from ._arm import plot_arm_postures
from ._comparison import plot_comparison
from ._condition_sweep import plot_condition_sweep
from ._fixed_points import plot_fixed_points
from ._hidden_states import plot_pca_trajectories, plot_tuning
from ._jpca import plot_jpca
from ._losses import plot_loss_history
from ._protocol import curve_interval, plot_protocol, protocol_curve, protocol_summary
from ._ranked import plot_ranked_comparison
from ._reaches import plot_speed_profiles, plot_trajectories
from ._style import condition_label, diverged_replicates
from ._sweep import plot_sweep
from ._tuning_comparison import plot_tuning_comparison

__all__ = [
    "condition_label",
    "curve_interval",
    "diverged_replicates",
    "plot_arm_postures",
    "plot_comparison",
    "plot_condition_sweep",
    "plot_fixed_points",
    "plot_jpca",
    "plot_loss_history",
    "plot_pca_trajectories",
    "plot_protocol",
    "plot_ranked_comparison",
    "plot_speed_profiles",
    "plot_sweep",
    "plot_trajectories",
    "plot_tuning",
    "plot_tuning_comparison",
    "protocol_curve",
    "protocol_summary",
]
