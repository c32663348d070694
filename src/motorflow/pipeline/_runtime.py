"""Process set-up for a pipeline stage: log file, progress output, compilation cache."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path


def enable_compilation_cache(directory: str | Path | None) -> None:
    """Cache compiled programs in `directory` (shared by every stage); '' or None: off.

    JAX is imported here, not at module import: a figure or summary job that only
    logs never loads it (about 1 CPU-second a job).
    """
    if not directory:
        return
    import jax

    path = Path(directory).absolute()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


# A stage log's line: "2026-11-27 21:50:24,795 INFO Wrote results/...".
LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


@contextlib.contextmanager
def stage_logging(log_path: str | Path, *more_paths: str | Path) -> Iterator[logging.Logger]:
    """Send the stage's log lines (and Python warnings) to `log_path` (and each of
    `more_paths`: a train pack's job writes every member's log), one per line.

    Progress bars stay on the console (a terminal) and never reach the file. Errors are
    logged there too and then re-raised, so they also reach the console.
    """
    logger = logging.getLogger("motorflow")
    logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)
    warnings_logger = logging.getLogger("py.warnings")
    with contextlib.ExitStack() as files:
        handlers = []
        for path in (log_path, *more_paths):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            handler = logging.StreamHandler(files.enter_context(open(path, "w", buffering=1)))
            handler.setFormatter(logging.Formatter(LOG_FORMAT))
            handlers.append(handler)
        for handler in handlers:
            logger.addHandler(handler)
            warnings_logger.addHandler(handler)
        level, propagate = logger.level, logger.propagate
        logger.setLevel(logging.INFO)
        logger.propagate = False
        logging.captureWarnings(True)
        # Where the job ran: on a cluster, the log ties each output to its SLURM job.
        slurm_job = os.environ.get("SLURM_JOB_ID")
        logger.info(
            "host %s%s", socket.gethostname(), f", SLURM job {slurm_job}" if slurm_job else ""
        )
        try:
            yield logger
        except BaseException:
            logger.exception("stage failed")
            raise
        finally:
            logging.captureWarnings(False)
            for handler in handlers:
                warnings_logger.removeHandler(handler)
                logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
