"""The closed-loop model: network (cell and readout), feedback channel, the loop that
steps them with the plant, one trial's run with its perturbations, ensembles of
replicates and their files."""
