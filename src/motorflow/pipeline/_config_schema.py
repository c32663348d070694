"""The JSON Schema of a workflow config, generated from :class:`WorkflowConfig`: the
schema Snakemake validates (`workflow/schemas/config.schema.yaml`) is
:func:`config_json_schema`'s output, never edited by hand."""

from __future__ import annotations

import copy
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from ._config_names import MAX_NAME_LENGTH, NAME_PATTERN
from ._workflow_config import WorkflowConfig


class _Schema(GenerateJsonSchema):
    """Titles off (the keys name themselves); each class's docstring is its description."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: Any) -> Any:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        return json_schema


def _name_keyed(node: Any) -> Any:
    """Post-processing of pydantic's schema: constrained dict keys, written as
    ``patternProperties`` (which lets other keys through), become ``propertyNames``;
    a tagged union's ``oneOf`` becomes ``anyOf``."""
    if isinstance(node, dict):
        node = {key: _name_keyed(value) for key, value in node.items()}
        if "discriminator" in node and "oneOf" in node:
            # Every key of a block is optional, so a partial block without its `kind`
            # (e.g. {n_substeps: 2}) can fit several kinds; the typed config settles it.
            node["anyOf"] = node.pop("oneOf")
        patterns = node.pop("patternProperties", None)
        if patterns:
            ((pattern, values),) = patterns.items()
            names: dict[str, Any] = {"pattern": pattern}
            if pattern == NAME_PATTERN:
                names["maxLength"] = MAX_NAME_LENGTH
            node["propertyNames"] = names
            node["additionalProperties"] = values
        return node
    if isinstance(node, list):
        return [_name_keyed(value) for value in node]
    return node


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of a workflow config (draft 2020-12), from :class:`WorkflowConfig`.

    Overrides are described by their blocks' schemas: every key of a block is
    optional, so a partial block validates.
    """
    schema = _name_keyed(WorkflowConfig.model_json_schema(schema_generator=_Schema))
    override = schema["$defs"]["Override"]["properties"]
    for block, section in (("task", "tasks"), ("model", "models"), ("training", "trainings")):
        # A partial block of the section's kind (a task block's kinds are a union).
        block_schema = copy.deepcopy(schema["properties"][section]["additionalProperties"])
        override[block] = {"anyOf": [block_schema, {"type": "null"}]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
