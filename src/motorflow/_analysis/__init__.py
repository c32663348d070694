"""Analyses of trained ensembles: hidden-state structure and statistics across replicates.

Each hidden-state analysis is a config block behind :class:`AbstractAnalysis` (its
settings under the config's `analysis`, the variables it adds to ``analysis.zarr`` and
its figure); `ANALYSES` registers them by name, and `AnalysisConfig` holds them all.
The analysis stage runs each in turn, and the workflow draws one figure per entry.
Adding an analysis is its module, its entry in `ANALYSES`, its figure's caption
(workflow/report/<name>.rst) and its tests; ``python -m motorflow docs`` adds its rows
to config/README.md.
"""
