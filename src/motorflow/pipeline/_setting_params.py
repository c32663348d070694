"""A job's settings back from its rule params (``name=<JSON value>`` texts): only
``json``, so that a figure or summary job reads its settings without loading the
library's configs (or JAX). :mod:`._job_settings` writes them."""

from __future__ import annotations

import json
from typing import Any

SETTING_PARAM_PREFIX = "setting"


def parse_setting_params(params: Any) -> dict[str, Any]:
    """Nested settings back from :func:`setting_param` texts (the inverse of flattening).

    `params` is a list of the texts, or a rule's named params (Snakemake's
    ``snakemake.params``), of which those named ``setting<i>`` are read.
    """
    if hasattr(params, "items"):
        params = [
            text
            for name, text in params.items()
            if name.startswith(SETTING_PARAM_PREFIX) and name[len(SETTING_PARAM_PREFIX) :].isdigit()
        ]
    nested: dict[str, Any] = {}
    for text in params:
        name, _, value = text.partition("=")
        *parents, last = name.split(".")
        node = nested
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = json.loads(value)
    return nested
