"""How many experiments a config's sweep-wide outputs show one by one.

Up to `EACH_EXPERIMENT_UP_TO` experiments, the summary contrasts every pair (30: 435
pairs), the comparison figure draws a column per experiment and the report holds each
experiment's figures. Past it, each is bounded whatever the sweep's size: the summary
contrasts each experiment with the first only (1,000 experiments would be half a million
pairs, hours of bootstrap), the comparison ranks each metric's means from the summary
(1,000 columns are unreadable), and the report holds the figures across experiments
while each experiment's stay in ``results/<config>/figures/`` (7,000 figures would make
a report of hundreds of megabytes). One number for all three, so that a sweep is small
or large for all of them at once.

The Snakefile imports it: it stays import-cheap.
"""

from __future__ import annotations

EACH_EXPERIMENT_UP_TO = 30


def shows_each_experiment(n_experiments: int) -> bool:
    """Whether the sweep-wide outputs of `n_experiments` show each one by one."""
    return n_experiments <= EACH_EXPERIMENT_UP_TO
