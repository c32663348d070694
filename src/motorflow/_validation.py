"""Check a workflow config against its JSON Schema, with one clear message per error."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jsonschema

from ._config import ConfigError
from ._experiments import Experiment, resolve_experiments


def _names_a_key(error: jsonschema.ValidationError) -> bool:
    return "propertyNames" in error.absolute_schema_path


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if _names_a_key(error):
        parts.append(repr(error.instance))
    return ".".join(parts) or "(top level)"


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        return f"{error.message}; allowed keys here: {allowed}"
    if _names_a_key(error) and list(error.absolute_path)[-1:] == ["grid"]:
        return (
            f"{error.instance!r} is not a sweep setting: use 'seed' or a dotted path "
            "starting with task., model. or training. (e.g. model.feedback.noise_std)"
        )
    if _names_a_key(error) and error.validator == "maxLength":
        return f"names have at most {error.validator_value} characters (they become file paths)"
    if _names_a_key(error):
        return (
            f"{error.instance!r} is not a valid name: use only letters, digits, '_' and '-' "
            "(names become file paths)"
        )
    return error.message


def check_schema(config: Mapping[str, Any], schema: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` for the first schema violation (the deepest, most specific)."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    # best_match prefers shallow errors; within a oneOf/anyOf the nested cause is clearer.
    while error.context:
        error = jsonschema.exceptions.best_match(error.context)
    raise ConfigError(_key_path(error), _message(error))


def check_resources(resources: Mapping[str, Any]) -> None:
    """GPU requests must say one thing: `gpus` (with an optional `gpu_model`) or `gres`."""
    for stage, settings in resources.items():
        path = f"resources.{stage}"
        gpus = settings.get("gpus", 0)
        if settings.get("gpu_model") and gpus < 1:
            raise ConfigError(
                f"{path}.gpu_model",
                f"{settings['gpu_model']!r} needs a GPU count: set {path}.gpus to 1 or more",
            )
        if settings.get("gres") and gpus:
            raise ConfigError(
                f"{path}.gres",
                f"{settings['gres']!r} and gpus: {gpus} both ask for GPUs; use gpus (and "
                "gpu_model) or, where the site takes only --gres, gres alone",
            )


def check_finite(value: Any, path: str = "") -> None:
    """Every number in the config is finite: NaN and infinities are never settings."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(path or "(top level)", f"must be a finite number, got {value!r}")
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_finite(item, f"{path}[{index}]")


def check_config(config: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Experiment]:
    """Schema, then meaning (references, sizes, names): the experiments, or a ConfigError."""
    check_finite(config)
    check_schema(config, schema)
    check_resources(config.get("resources", {}))
    return resolve_experiments(config)
