"""``python -m motorflow schema``: print the workflow config's JSON Schema as YAML.

The schema at workflow/schemas/config.schema.yaml is this command's output; after
changing a config class, regenerate it with
``python -m motorflow schema > workflow/schemas/config.schema.yaml``.
"""

from __future__ import annotations

import sys

import yaml

from ._workflow_config import config_json_schema

HEADER = (
    "# Generated from motorflow's typed config (motorflow.WorkflowConfig); do not edit.\n"
    "# Regenerate: python -m motorflow schema > workflow/schemas/config.schema.yaml\n"
)


def schema_text() -> str:
    """The schema file's text: a header, then the schema as block-style YAML."""
    return HEADER + yaml.safe_dump(config_json_schema(), sort_keys=False, width=88)


def main(argv: list[str]) -> int:
    if argv != ["schema"]:
        print("usage: python -m motorflow schema", file=sys.stderr)
        return 2
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
