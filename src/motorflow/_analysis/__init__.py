"""Analyses of trained ensembles: hidden-state structure and statistics across replicates."""
