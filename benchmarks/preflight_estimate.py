"""The preflight estimate against what a finished run measured.

For each experiment of a config whose run has finished: the estimated peak memory of
its train and evaluate jobs against the ``max_rss`` of Snakemake's benchmark files,
and the estimated disk against the bytes of its folder plus its trial specs. Usage:

    python benchmarks/preflight_estimate.py CONFIG [CONFIG ...]

Each config's results are read from its results folder (``results/<config>/`` or its
``results`` key), relative to the current directory.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import motorflow.pipeline as mfp

MiB = 2**20


def _max_rss(table: Path) -> float | None:
    """The job's measured peak (bytes), or None where it did not run."""
    if not table.exists():
        return None
    header, row = table.read_text().splitlines()[:2]
    return float(dict(zip(header.split("\t"), row.split("\t"), strict=True))["max_rss"]) * MiB


def _bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def compare(config: str) -> list[float]:
    checked = mfp.check_config(mfp.read_config([config]))
    results = mfp.results_folder(checked.settings.results, [config])
    ratios = []
    print(f"{config} ({results}/)")
    print(
        f"  {'experiment':<22}{'train est/meas':>22}{'evaluate est/meas':>24}{'disk est/meas':>22}"
    )
    for item in mfp.estimate(checked.settings, checked.experiments):
        cells = []
        for stage, estimated in (("train", item.train_memory), ("evaluate", item.evaluate_memory)):
            measured = _max_rss(Path(results) / "benchmarks" / stage / f"{item.experiment}.tsv")
            if measured is None:
                cells.append(f"{'-':>22}")
                continue
            ratios.append(estimated / measured)
            cells.append(
                f"{estimated / MiB:8.0f} / {measured / MiB:5.0f} MiB {estimated / measured:4.2f}"
            )
        folder = Path(results) / item.experiment
        dataset = Path(results) / "trials" / checked.experiments[item.experiment].dataset
        written = _bytes(folder) + (_bytes(dataset) if dataset.exists() else 0)
        disk = f"{item.total_disk / MiB:7.1f} / {written / MiB:6.1f} MiB" if written else "-"
        print(f"  {item.experiment:<22}{cells[0]:>24}{cells[1]:>24}  {disk}")
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+")
    ratios = [ratio for config in parser.parse_args().configs for ratio in compare(config)]
    if ratios:
        print(
            f"memory est/meas over {len(ratios)} jobs: min {min(ratios):.2f}, median "
            f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}"
        )


if __name__ == "__main__":
    main()
