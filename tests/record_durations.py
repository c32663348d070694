"""Write tests/durations.json from a run's JUnit XML: each test's seconds (setup, call and
teardown), which tests/conftest.py reads to mark the long ones `slow` (out of
`pytest -m fast`) and to hand the longest groups of tests to xdist's workers first.

    pytest --junitxml=run.xml && python tests/record_durations.py run.xml

Tests under a second are left out: they count as fast and short, as does a test the
file does not know yet, until it is written again.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")


def durations(junit_xml: Path) -> dict[str, float]:
    found = {}
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        module = case.get("classname", "").replace(".", "/") + ".py"
        # xdist's loadgroup adds "@group" to the id of a grouped test
        name = case.get("name", "").split("@")[0]
        seconds = float(case.get("time", 0))
        if seconds >= 1.0:
            found[f"{module}::{name}"] = round(seconds, 1)
    return dict(sorted(found.items()))


if __name__ == "__main__":
    DURATIONS.write_text(json.dumps(durations(Path(sys.argv[1])), indent=0) + "\n")
