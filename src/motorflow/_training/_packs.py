"""Packed training: several experiments that share their compiled program train as one
call per chunk, mapped over the experiments, each still its own run.

A GPU spends about the same time on a batch whatever the replicate count (the launches
of a rollout's sequential steps dominate), so a small experiment run alone uses a sliver
of it. :func:`train_pack` runs one :func:`training_steps` generator per experiment and
advances them in lockstep: the experiments waiting on the same chunk of the same program
(equal :class:`ProgramKey`: equal settings and shapes, e.g. a sweep of seeds, noise
levels, learning rates, loss weights or perturbation strengths, which are arrays:
:class:`motorflow._model._setting.Setting`, :meth:`Trainer.program_form`) are computed
by one compiled call over a new leading member axis, and each takes back its own slice.
Everything else (resuming, validation, checkpoints, history, callbacks, preemption) is
each experiment's own run, exactly as :func:`train` does it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from ._driver import ChunkRequest, TrainResult, training_steps
from ._shared_programs import ProgramKey
from ._state import BatchRecords, TrainState
from ._trainer import Trainer

logger = logging.getLogger("motorflow")

Output = tuple[TrainState, BatchRecords]


def train_pack(
    members: Sequence[Mapping[str, Any]],
    *,
    vectorize_members: bool | None = None,
    members_per_program: int | None = None,
    names: Sequence[str] | None = None,
) -> list[TrainResult]:
    """Train several experiments together, each as :func:`train` trains it alone.

    **Arguments:**

    - `members`: per experiment, :func:`train`'s arguments by name (``ensemble``,
      ``trials``, ``task``, ``config``, ``key``, and any of the optional ones: each its
      own ``checkpoint_dir``, ``validation``, ``on_log``, ...); ``progress`` defaults
      to False here (a bar per experiment is noise; each still logs its lines).
    - `vectorize_members`: compute a program's experiments as one batched (vmapped)
      program rather than one after another (``lax.map``). By default only off the CPU,
      as :class:`Trainer`'s ``vectorize_replicates``: a GPU needs the batch to be busy,
      while XLA's CPU backend runs plain matmuls faster than batched ones, and there
      experiments one after another give bitwise their unpacked results.
    - `members_per_program`: at most this many experiments per compiled call, and
      every call padded to exactly this many (copies of its first): a call's width is
      then fixed, so an experiment's result never depends on how many others share its
      program (vmapped kernels may round differently at another width), and memory is
      bounded. None: all the experiments that can share a call, unpadded; an experiment
      with no partner then runs its own (unpacked) program.
    - `names`: a name per experiment, which starts each of its log lines (the lines of
      a pack's experiments interleave).

    Returns each experiment's :class:`TrainResult`, in the order of `members`.

    Experiments share a call when their trainers have the same :class:`ProgramKey`
    (every setting that is not an array and every shape equal: a sweep of seeds,
    nonzero noise levels, learning rates, loss weights or perturbation strengths) and
    wait on the same batches; the others (another optimizer or schedule, a zero noise
    level, a run that resumed elsewhere) run in calls of their own, in the same
    lockstep. One
    experiment's edit therefore never changes another's result: on the CPU (``lax.map``)
    each equals bitwise its run alone; vmapped, it is equal within float rounding to it,
    and bitwise the same across edits of the others whenever the call's width is the same
    (give `members_per_program` to fix it).

    A pack runs on one device: a trainer that spreads its replicates over several (more
    than one device visible) is refused. A signal (SIGTERM, SIGUSR1) reaches every
    experiment: each checkpoints after its running call and stops. When an experiment
    stops with an error (a signal, a non-finite loss), the others train on to their
    ends; then the first error (in member order) is raised, a note naming the others'.
    """
    if vectorize_members is None:
        vectorize_members = jax.default_backend() != "cpu"
    names = list(names) if names is not None else [None] * len(members)
    if len(names) != len(members):
        raise ValueError(f"{len(names)} names for {len(members)} members")
    runs = [_Run(index, member, name) for index, (member, name) in enumerate(zip(members, names))]
    logger.addFilter(_NAMES)
    try:
        for run in runs:
            run.advance(None)
        while waiting := [run for run in runs if run.request is not None]:
            _advance_together(waiting, vectorize_members, members_per_program)
    finally:
        logger.removeFilter(_NAMES)
        for run in runs:
            run.steps.close()
    return _results(runs)


class _MemberName(logging.Filter):
    """Starts each log line with the name of the pack's experiment that logs it."""

    def __init__(self) -> None:
        super().__init__()
        self.current: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.current is not None:
            record.msg = f"{self.current}: {record.msg}"
        return True


_NAMES = _MemberName()


class _Run:
    """One experiment of a pack: its :func:`training_steps`, the chunk it waits on (None:
    none) and how it ended (its result or its error)."""

    def __init__(self, index: int, member: Mapping[str, Any], name: str | None = None):
        self.index, self.name = index, name
        self.steps = training_steps(**{"progress": False, **member})
        self.request: ChunkRequest | None = None
        self.result: TrainResult | None = None
        self.error: Exception | None = None

    def advance(self, output: Output | None) -> None:
        """Hand the run its chunk's `output` (None: start it) and take its next request."""
        _NAMES.current = self.name
        try:
            self.request = self.steps.send(output)
        except StopIteration as done:
            self.request, self.result = None, done.value
        except Exception as error:  # this run's own: the others train on
            self.request, self.error = None, error
        finally:
            _NAMES.current = None


def _advance_together(runs: list[_Run], vectorize: bool, width: int | None) -> None:
    """One round of the lockstep: every waiting run's chunk computed, the runs that can
    share a call in one, and each run advanced to its next request."""
    began = time.perf_counter()
    groups = _groups(runs, width)
    for group in groups:
        outputs = run_packed_chunk(
            [run.request for run in group], vectorize_members=vectorize, width=width
        )
        for run, output in zip(group, outputs):
            run.advance(output)
    logger.debug(
        "pack: %d experiment(s) trained a chunk in %d compiled call(s), %.3f s",
        len(runs),
        len(groups),
        time.perf_counter() - began,
    )


def _groups(runs: list[_Run], width: int | None) -> list[list[_Run]]:
    """`runs` by the call they can share (same program, batches and shapes), in order of
    their first run, each cut into calls of at most `width` runs."""
    groups: dict[tuple, list[_Run]] = {}
    for run in runs:
        _check_one_device(run.request, f"member {run.index}")
        groups.setdefault(_signature(run.request), []).append(run)
    size = width or max(map(len, groups.values()))
    return [group[i : i + size] for group in groups.values() for i in range(0, len(group), size)]


def _signature(request: ChunkRequest) -> tuple:
    """What a call's runs share: the program, the batches and every argument's shape."""
    key, leaves = request.trainer._program_parts
    arrays, structure = jax.tree.flatten((leaves, request.state, request.inputs))
    shapes = tuple((tuple(x.shape), str(x.dtype)) for x in arrays)
    return key, request.start, request.stop, structure, shapes


def _check_one_device(request: ChunkRequest, who: str) -> None:
    mesh = request.trainer.layout.mesh
    if mesh is not None:
        raise ValueError(
            f"{who} of the pack spreads its replicates over {mesh.devices.size} devices, "
            "but a pack trains on one device: make one device visible to this process "
            "(CUDA_VISIBLE_DEVICES, or no --xla_force_host_platform_device_count on the "
            "CPU), or train it alone with motorflow.train"
        )


def run_packed_chunk(
    requests: Sequence[ChunkRequest],
    *,
    vectorize_members: bool,
    width: int | None = None,
) -> list[Output]:
    """Each request's ``(new_state, records)``, as :meth:`ChunkRequest.run` returns them,
    from one compiled call over all of them (padded to `width` with copies of the first;
    None: unpadded, and a single request runs its trainer's own program).

    The requests must share their program and chunk (:func:`train_pack` groups them):
    a :class:`ValueError` names the first that does not, and the setting it differs in.
    """
    first = requests[0]
    shared = _signature(first)
    for position, request in enumerate(requests):
        _check_one_device(request, f"request {position}")
        if _signature(request) != shared:
            raise ValueError(
                f"request {position} of a packed call cannot share the compiled program "
                f"of request 0: {describe_difference(first, request)}"
            )
    if width is None and len(requests) == 1:
        return [first.run()]
    padded = list(requests) + [first] * ((width or len(requests)) - len(requests))
    key = first.trainer._program_parts[0]
    program = _packed_program(key, vectorize_members)
    members = [(r.trainer._program_parts[1], r.state, r.inputs[0]) for r in padded]
    outputs = program(members, *first.inputs[1:])
    return [request.finish(output) for request, output in zip(requests, outputs)]


def _packed_program(key: ProgramKey, vectorize: bool) -> Any:
    """The jitted packed chunk for trainers of `key`, kept with the key's own programs
    (so freed with them); jit traces it once per number of members."""
    name = ("packed run_chunk", vectorize)
    program = key.programs.get(name)
    if program is None:
        program = key.programs[name] = _jit_packed(key.structure, key.static, vectorize)
    return program


def _jit_packed(structure: Any, static: Any, vectorize: bool) -> Any:
    """:meth:`Trainer.run_chunk` mapped over members ``(trainer arrays, state, trials)``
    stacked along a new leading axis (vmapped, or one after another with ``lax.map``),
    their batch indices and flags shared; returns the members' outputs one by one.
    (It holds the key's parts, not the key: a key and its programs are freed together.)"""
    run_chunk = Trainer.run_chunk.__wrapped__

    def one(member, batch_index, active, rule_flags):
        leaves, state, trials = member
        trainer = eqx.combine(jax.tree.unflatten(structure, leaves), static)
        return run_chunk(trainer, state, trials, batch_index, active, rule_flags)

    def packed(members: list, batch_index, active, rule_flags):
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *members)
        if vectorize:
            outputs = jax.vmap(one, in_axes=(0, None, None, None))(
                stacked, batch_index, active, rule_flags
            )
        else:
            outputs = jax.lax.map(lambda m: one(m, batch_index, active, rule_flags), stacked)
        return [jax.tree.map(lambda x: x[i], outputs) for i in range(len(members))]

    packed.__name__ = packed.__qualname__ = "packed_run_chunk"
    return jax.jit(packed)


def describe_difference(a: ChunkRequest, b: ChunkRequest) -> str:
    """Why two requests cannot share a call, in words: the settings they differ in."""
    if (a.start, a.stop) != (b.start, b.stop):
        return f"it trains batches {b.start}:{b.stop}, not {a.start}:{a.stop}"
    forms = a.trainer.program_form(), b.trainer.program_form()
    for block, x, y in (
        ("train", *(form.config for form in forms)),
        ("task", *(form.task.config for form in forms)),
    ):
        if x != y:
            keys = _differing_keys(x.to_dict(), y.to_dict())
            return "its settings differ: " + ", ".join(f"{block}.{k}" for k in keys)
    key_a, key_b = a.trainer._program_parts[0], b.trainer._program_parts[0]
    if key_a == key_b:
        return "an array's shape differs (trials, state or model)"
    if not (key_a._shareable and key_b._shareable):
        return "a setting that cannot be hashed keys a program of its own"
    return "its model differs (a setting without weights, or an array's shape)"


def _differing_keys(a: Mapping[str, Any], b: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys at which two nested mappings differ."""
    found = []
    for name in sorted(set(a) | set(b), key=str):
        x, y = a.get(name), b.get(name)
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            found += _differing_keys(x, y, f"{prefix}{name}.")
        elif x != y and not (x != x and y != y):  # a program form's arguments dump as NaN
            found.append(f"{prefix}{name}")
    return found


def _results(runs: list[_Run]) -> list[TrainResult]:
    """The runs' results in order, or the first run's error (a note naming the others')."""
    failed = [run for run in runs if run.error is not None]
    if not failed:
        return [run.result for run in runs]
    error = failed[0].error
    others = ", ".join(f"member {r.index} ({type(r.error).__name__})" for r in failed[1:])
    finished = [run.index for run in runs if run.result is not None]
    error.add_note(
        f"In a pack of {len(runs)}: member {failed[0].index} stopped with this error"
        + (f"; so did {others}" if others else "")
        + f"; member(s) {finished or 'none'} finished (each in its own checkpoints, if any)."
    )
    raise error
