"""Kill points: SIGKILL this process at a named moment, to test crash safety.

Set ``MOTORFLOW_KILL_AT="<point>[#<occurrence>[#<delay_s>]]"`` in the environment
of a stage: at the `occurrence`-th time (default 1) the code passes `point`, the
process kills itself with SIGKILL after `delay_s` seconds (default 0; a delay lets
the kill land inside the work that follows, e.g. a compilation). Points:

- ``chunk``: before each compiled training call (the first one compiles);
- ``checkpoint``: just after a checkpoint write was started (it runs on in the background);
- ``write:<store name>``: a Zarr store is written but not yet moved into place;
- ``save_model``: the model arrays are written but not yet moved into place.
- ``warm_worker_start``: a warm worker starts (before it is ready for jobs).

Unset (always, outside tests), a kill point does nothing.
"""

from __future__ import annotations

import collections
import os
import signal
import threading

ENV = "MOTORFLOW_KILL_AT"
_passed: collections.Counter[str] = collections.Counter()


def kill_point(name: str) -> None:
    """Kill this process here if ``MOTORFLOW_KILL_AT`` names this point and occurrence."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, *rest = spec.split("#")
    if point != name:
        return
    occurrence = int(rest[0]) if rest else 1
    delay = float(rest[1]) if len(rest) > 1 else 0.0
    _passed[name] += 1
    if _passed[name] != occurrence:
        return
    if delay > 0:
        threading.Timer(delay, _kill).start()
    else:
        _kill()


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def reset() -> None:
    """Count each point's occurrences afresh: a warm worker's next job is a process of
    its own as far as kill points go (motorflow.pipeline._warm_worker)."""
    _passed.clear()
