"""Export one replicate of a trained experiment as a model of its own."""

from __future__ import annotations

import os
from pathlib import Path

import equinox as eqx
import jax

from .._atomic import atomic_directory
from .._config import TaskConfig
from .._model._ensemble import n_replicates, take_replicate
from .._model._saved_ensembles import load_ensemble, load_training_record, save_ensemble
from .._tasks import Task
from ._results import MODELS, ResultsError, experiment_folder, experiment_settings

MODEL_FILE = "model.eqx"
README = "README.txt"

_README = """\
Replicate {replicate} of the experiment {experiment} ({parameters} parameters), exported
by motorflow {version}. Paths here are relative: run this from the folder that holds
{folder}/ (the export can be moved or copied anywhere).

As a one-replicate motorflow ensemble (its leading replicate axis has size 1):

    import motorflow as mf
    ensemble, config = mf.load_ensemble("{folder}")
    model = mf.take_replicate(ensemble, 0)

With equinox: {model_file} holds the one model's leaves (no replicate axis);
motorflow builds the model to fill from the config in ensemble.json:

    import json, equinox as eqx, jax, motorflow as mf
    record = json.loads(open("{folder}/ensemble.json").read())
    like = mf.build_model(mf.ModelConfig.from_dict(record["model"]), n_task_inputs=record["n_task_inputs"], key=jax.random.key(0))
    model = eqx.tree_deserialise_leaves("{folder}/{model_file}", like)
"""


def _one_replicate(ensemble: eqx.Module, index: int) -> tuple[eqx.Module, eqx.Module]:
    """Replicate `index` as a model, and as an ensemble of one (a leading axis of 1)."""
    model = take_replicate(ensemble, index)
    arrays, static = eqx.partition(model, eqx.is_array)
    return model, eqx.combine(jax.tree.map(lambda leaf: leaf[None], arrays), static)


def _check_target(folder: Path) -> None:
    """Refuse to replace a folder that holds anything but an earlier export."""
    if not folder.exists():
        return
    earlier_export = (folder / MODEL_FILE).is_file() and (folder / "ensemble.json").is_file()
    if not folder.is_dir() or (any(folder.iterdir()) and not earlier_export):
        raise ResultsError(
            f"{folder} exists and is not an exported model; export into a new folder"
        )


EXPORTS = "exports"


def default_export_folder(experiment: str | Path, replicate: int, *, best: bool = False) -> Path:
    """Where an export goes unless told: ``exports/<experiment>-replicate<i>[-best]``
    in the experiment's results folder."""
    experiment = Path(experiment)
    name = f"{experiment.name}-replicate{replicate}{'-best' if best else ''}"
    return experiment.parent / EXPORTS / name


def export_replicate(
    experiment: str | Path,
    replicate: int,
    folder: str | Path | None = None,
    *,
    best: bool = False,
) -> Path:
    """Write replicate `replicate` of a trained experiment to `folder`, on its own.

    `folder` receives a one-replicate ensemble that :func:`load_ensemble` reads (its
    training record names the experiment and replicate it came from), the model's
    leaves without the replicate axis in ``model.eqx`` (for
    ``eqx.tree_deserialise_leaves``), and a ``README.txt`` saying how to load either.
    It appears complete or not at all; an earlier export there is replaced, any
    other existing folder is refused (:class:`ResultsError`).

    **Arguments:**

    - `experiment`: the experiment's folder, ``results/<config>/<experiment>``.
    - `replicate`: which replicate, from 0.
    - `folder`: where to write it (None: :func:`default_export_folder`).
    - `best`: export the replicate at its lowest validation loss (``model_best``)
      rather than its final parameters.

    Returns the folder written.
    """
    experiment = experiment_folder(experiment)
    if folder is None:
        folder = default_export_folder(experiment, replicate, best=best)
    folder = Path(folder)
    parameters = "best" if best else "final"
    source = experiment / MODELS[parameters]
    if not (source / "ensemble.json").is_file():
        raise ResultsError(f"{source} is missing: the experiment has no {parameters} model")
    ensemble, config = load_ensemble(source)
    count = n_replicates(ensemble)
    if not 0 <= replicate < count:
        raise ResultsError(
            f"replicate {replicate} is out of range: {experiment} has replicates 0 to {count - 1}"
        )
    _check_target(folder)
    model, one = _one_replicate(ensemble, replicate)
    record = load_training_record(source)
    source_path = Path(os.path.relpath(experiment.absolute(), folder.absolute())).as_posix()
    training = {
        **{
            name: [values[replicate]] for name, values in record.items() if isinstance(values, list)
        },
        "parameters": record.get("parameters", parameters),
        # Relative to the export, so that the record names no machine's paths.
        "exported_from": {"experiment": source_path, "replicate": replicate},
    }
    task = Task(TaskConfig.from_dict(experiment_settings(experiment)["task"], "task"))
    with atomic_directory(folder) as tmp:
        save_ensemble(tmp, one, config, n_task_inputs=task.n_inputs, training=training)
        eqx.tree_serialise_leaves(tmp / MODEL_FILE, model)
        (tmp / README).write_text(
            _README.format(
                replicate=replicate,
                experiment=f"{experiment.name} ({source_path} from here)",
                parameters=parameters,
                version=_version(),
                folder=folder.name,
                model_file=MODEL_FILE,
            )
        )
    return folder


def _version() -> str:
    from importlib.metadata import version

    return version("motorflow")
