"""A regular expression matching exactly a set of names, for Snakemake's wildcard
constraints.

Snakemake matches every file of the plan against its rules' patterns, and a wildcard
constrained to the config's experiments is an alternation of their names: written
``a|b|c|...``, each match tries the names one after another, so planning a sweep grows
with the square of its size (1,000 experiments: a 29 KB pattern applied 31,000 times).
Factored into a trie (``noise-seed(?:1(?:-...)|2...)``), a match reads each character
once whatever the number of names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_END = ""  # the key of a trie node that ends a name (no character is empty)


def names_pattern(names: Iterable[str]) -> str:
    """A regex that fully matches each of `names` and nothing else (``(?!)``, which
    matches nothing, for no names)."""
    trie: dict[str, dict] = {}
    for name in names:
        node = trie
        for character in name:
            node = node.setdefault(character, {})
        node[_END] = {}
    return _node_pattern(trie) if trie else "(?!)"


def _node_pattern(node: dict[str, dict]) -> str:
    """The pattern of what may follow a trie node (empty when a name ends here alone)."""
    # A run of single children is one string (no group per character, no recursion).
    text = ""
    while len(node) == 1 and _END not in node:
        ((character, node),) = node.items()
        text += re.escape(character)
    branches = [
        re.escape(character) + _node_pattern(child)
        for character, child in sorted(node.items())
        if character != _END
    ]
    if not branches:
        return text
    if len(branches) == 1 and _END not in node:
        return text + branches[0]
    group = "(?:" + "|".join(branches) + ")"
    return text + (group + "?" if _END in node else group)
