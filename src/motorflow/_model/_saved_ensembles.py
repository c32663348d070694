"""Save and load ensembles: orbax arrays + a JSON config; rebuilt, then filled. No pickle."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import equinox as eqx
import jax

from .._atomic import atomic_directory
from .._cells import CELLS
from .._config import ModelConfig
from .._faults import kill_point
from .._orbax import orbax_checkpoint, restore_target
from ._ensemble import make_ensemble, n_replicates
from ._setting import fill_settings, is_setting, is_weight, weights

logger = logging.getLogger("motorflow")

FORMAT = "motorflow.ensemble/1"
_CONFIG = "ensemble.json"
_ARRAYS = "arrays"
_OPTIMIZER = "optimizer"


def save_ensemble(
    path: str | Path,
    ensemble: eqx.Module,
    config: ModelConfig,
    *,
    n_task_inputs: int,
    optimizer_state: Any = None,
    training: dict[str, Any] | None = None,
) -> None:
    """Write `ensemble` (built from `config`) to the directory `path`, atomically.

    With `optimizer_state` (the training's final one), it is saved beside the arrays,
    for an experiment that continues it (:func:`load_optimizer_state`). `training`
    (plain values: which parameters these are, which replicates diverged) is kept in
    the record, read back by :func:`load_training_record`. The model's
    :class:`Setting`'s are not saved: the config holds them. The directory appears
    complete or not at all; an existing one is replaced.
    """
    record = {
        "format": FORMAT,
        "model": config.to_dict(),
        "n_replicates": n_replicates(ensemble),
        "n_task_inputs": n_task_inputs,
        "training": training or {},
    }
    with atomic_directory(path) as tmp:
        tmp.mkdir(parents=True)
        with orbax_checkpoint().StandardCheckpointer() as checkpointer:
            checkpointer.save(tmp / _ARRAYS, weights(ensemble))
            if optimizer_state is not None:
                checkpointer.save(tmp / _OPTIMIZER, optimizer_state)
        (tmp / _CONFIG).write_text(json.dumps(record, indent=1, sort_keys=True))
        kill_point("save_model")
    logger.info("Wrote %s", path)


def _record(path: Path) -> dict[str, Any]:
    record_path = path / _CONFIG
    if not record_path.is_file():
        raise FileNotFoundError(f"{path} is not a saved motorflow ensemble: {_CONFIG} is missing")
    record = json.loads(record_path.read_text())
    if record.get("format") != FORMAT:
        raise ValueError(
            f"{record_path}: unknown format {record.get('format')!r}; expected {FORMAT!r}"
        )
    return record


def _with_cell_block(model: dict[str, Any]) -> dict[str, Any]:
    """A model's settings saved before cells had blocks (``network.cell`` a kind, the
    cell's settings the network's keys, every cell's there) as they are now: the keys
    its cell takes moved into its block, the other cells' dropped."""
    network = model.get("network")
    kind = network.get("cell") if isinstance(network, dict) else None
    if not (isinstance(kind, str) and kind in CELLS):
        return model
    fields = CELLS[kind].model_fields
    settings = {name for config in CELLS.values() for name in config.model_fields} - {"kind"}
    cell = {"kind": kind, **{k: v for k, v in network.items() if k in fields}}
    kept = {key: value for key, value in network.items() if key not in settings}
    return {**model, "network": {**kept, "cell": cell}}


def load_training_record(path: str | Path) -> dict[str, Any]:
    """The `training` values saved with the ensemble at `path` (empty if none)."""
    return _record(Path(path).absolute()).get("training", {})


def load_ensemble(path: str | Path) -> tuple[eqx.Module, ModelConfig]:
    """Read an ensemble saved by :func:`save_ensemble`; returns it and its config."""
    logger.info("Reading %s", path)
    path = Path(path).absolute()
    record = _record(path)
    config = ModelConfig.from_dict(_with_cell_block(record["model"]), "model")
    skeleton = eqx.filter_eval_shape(
        make_ensemble,
        config,
        n_replicates=record["n_replicates"],
        n_task_inputs=record["n_task_inputs"],
        key=jax.random.key(0),
    )
    skeleton = fill_settings(skeleton, config.to_dict())
    return _restore_weights(path / _ARRAYS, skeleton), config


def _name(path: jax.tree_util.KeyPath) -> str:
    return jax.tree_util.keystr(path, simple=True, separator=".")


def _restore_weights(folder: Path, skeleton: eqx.Module) -> eqx.Module:
    """`skeleton` (its weights shape-only) with the weights saved in `folder`, matched
    by name (``network.readout.weight``): a file's tree need not be the model's (one
    saved while a noise level was a static field has no entry for it)."""
    wanted = {_name(path): leaf for path, leaf in jax.tree.leaves_with_path(weights(skeleton))}
    with orbax_checkpoint().StandardCheckpointer() as checkpointer:
        on_disk = checkpointer.metadata(folder).item_metadata.tree
        saved = [entry.name for entry in jax.tree.leaves(on_disk)]
        if sorted(saved) != sorted(wanted):
            raise ValueError(
                f"{folder} holds the arrays {sorted(saved)}, but the model its config "
                f"builds has {sorted(wanted)}: it was saved by another model"
            )
        target = jax.tree.map(lambda entry: wanted[entry.name], on_disk)
        restored = checkpointer.restore(folder, restore_target(target))
    found = {_name(path): leaf for path, leaf in jax.tree.leaves_with_path(restored)}
    return jax.tree_util.tree_map_with_path(
        lambda path, leaf: found[_name(path)] if isinstance(leaf, jax.ShapeDtypeStruct) else leaf,
        skeleton,
    )


def load_optimizer_state(path: str | Path, like: Any) -> Any:
    """The optimizer state saved with the ensemble at `path`, restored into the structure
    of `like` (arrays or shape-dtype structs of the same tree)."""
    path = Path(path).absolute()
    if not (path / _OPTIMIZER).is_dir():
        raise FileNotFoundError(
            f"{path} holds no optimizer state (it was saved without one); retrain it, or "
            "start from it with reset_optimizer: true"
        )
    target = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), like)
    with orbax_checkpoint().StandardCheckpointer() as checkpointer:
        return checkpointer.restore(path / _OPTIMIZER, restore_target(target))


def adopt_weights(ensemble: eqx.Module, source: eqx.Module) -> eqx.Module:
    """`ensemble` with the arrays of `source` (another ensemble of the same shapes) in
    place of its own; its settings without weights (noise, delays, plant) are kept."""
    arrays, rest = eqx.partition(ensemble, is_weight, is_leaf=is_setting)
    mine, structure = jax.tree.flatten(arrays)
    theirs = jax.tree.leaves(weights(source))
    shapes = [x.shape for x in mine], [x.shape for x in theirs]
    if shapes[0] != shapes[1]:
        raise ValueError(f"the ensembles' arrays differ in shape: {shapes[0]} vs {shapes[1]}")
    return eqx.combine(jax.tree.unflatten(structure, theirs), rest)
