"""``python -m motorflow``: the ``motorflow`` command (see :mod:`motorflow.pipeline._cli`).

``python -m motorflow schema`` prints the workflow config's JSON Schema as YAML.
The schema at workflow/schemas/config.schema.yaml is its output; after changing a
config class, regenerate it with
``python -m motorflow schema > workflow/schemas/config.schema.yaml``, and
config/README.md's key tables with ``python -m motorflow docs``.
"""

from __future__ import annotations

import sys

from .pipeline._cli import main

if __name__ == "__main__":
    sys.exit(main())
