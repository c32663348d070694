"""Non-finite losses and parameters: per-replicate detection, and what a run does then.

Inside the compiled update a replicate whose loss or new parameters are not finite
keeps its previous parameters and optimizer state, and the batch is written into
its ``diverged_at`` (-1 while healthy): its parameters are then those after
``diverged_at`` batches. Between compiled calls :class:`DivergencePolicy` reads
those flags and applies ``train.on_divergence``: ``stop`` raises
:class:`NonFiniteLossError`; ``isolate`` logs the replicate as frozen and lets the
others train on (the computation of a healthy replicate never reads another's, so
it is bitwise what it would be had none diverged).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool

logger = logging.getLogger("motorflow")

HEALTHY = -1


class NonFiniteLossError(RuntimeError):
    """Training diverged: a loss or a parameter became NaN or infinite.

    Training stops before anything is written from the non-finite state; `what`
    says where it was seen (training loss, validation loss or parameters).
    """

    def __init__(
        self,
        *,
        batch: int,
        replicates: list[int],
        terms: list[str],
        resume_hint: str,
        what: str = "training loss",
    ):
        self.batch, self.replicates, self.terms, self.what = batch, replicates, terms, what
        self._settings = {
            "batch": batch,
            "replicates": replicates,
            "terms": terms,
            "resume_hint": resume_hint,
            "what": what,
        }
        where = "loss term(s)" if what != "parameters" else "in"
        super().__init__(
            f"Non-finite {what} at batch {batch} in replicate(s) "
            f"{', '.join(map(str, replicates))}, {where} {', '.join(terms)}; "
            f"training stopped. {resume_hint} Running again unchanged would diverge "
            "again: lower optimizer.learning_rate, set optimizer.clip_global_norm or "
            "reduce the noise, or set train.on_divergence: isolate to train the other "
            "replicates on, then run again (with changed settings training starts "
            "afresh; checkpoints of other settings are never resumed)."
        )

    def __reduce__(self):
        # Keyword-only settings: rebuilt from them (a worker process's error reaches
        # its parent intact).
        return functools.partial(type(self), **self._settings), ()


def all_finite(tree: Any) -> Bool[Array, ""]:
    """Whether every floating-point value of `tree` (one replicate's) is finite."""
    leaves = [x for x in jax.tree.leaves(tree) if eqx.is_inexact_array(x)]
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def keep_where(ok: Bool[Array, ""], new: Any, old: Any) -> Any:
    """`new` where `ok`, else `old` (leaf by leaf; one replicate's trees)."""
    return jax.tree.map(lambda n, o: jnp.where(ok, n, o), new, old)


class DivergencePolicy:
    """Applies ``train.on_divergence`` to the replicates found diverged.

    **Arguments:**

    - `on_divergence`: ``"stop"`` or ``"isolate"``.
    - `resume_hint`: a function giving the error's sentence about the checkpoints.
    """

    def __init__(self, on_divergence: str, resume_hint):
        self.isolate = on_divergence == "isolate"
        self.resume_hint = resume_hint
        self._said_all = False

    def after_update(
        self, before: np.ndarray, after: np.ndarray, losses: dict[str, np.ndarray], start: int
    ) -> None:
        """Act on the replicates that diverged in the chunk from batch `start`
        (`before`/`after`: ``diverged_at`` per replicate; `losses`: `(chunk, replicate)`).

        An isolating update freezes a replicate at a non-finite loss or parameter; a
        stopping one only at non-finite parameters (watching the losses in the
        update is slow), so here a non-finite loss of a replicate that was healthy
        counts from its batch too."""
        newly = (before == HEALTHY) & (after != HEALTHY)
        if self.isolate:
            for replicate in np.flatnonzero(newly):
                batch = int(after[replicate])
                terms, what = _cause(losses, batch - start, np.arange(len(after)) == replicate)
                self._isolated(replicate, batch, f"non-finite {what} ({', '.join(terms)})")
            self._unless_all_diverged(after)
            return
        never = np.iinfo(np.int64).max
        bad_loss = ~np.isfinite(losses["total"]) & (before == HEALTHY)
        first = np.minimum(
            np.where(bad_loss.any(axis=0), start + bad_loss.argmax(axis=0).astype(np.int64), never),
            np.where(newly, after.astype(np.int64), never),
        )
        if (first < never).any():
            batch = int(first.min())
            which = first == batch
            raise self._error(batch, which, *_cause(losses, batch - start, which))

    def after_validation(
        self, diverged_at: np.ndarray, total: np.ndarray, batch: int
    ) -> np.ndarray:
        """The healthy replicates whose validation loss after `batch` batches is not
        finite (to be frozen there); raises for them unless isolating."""
        bad = (diverged_at == HEALTHY) & ~np.isfinite(total)
        if bad.any() and not self.isolate:
            raise self._error(batch, bad, ["total"], "validation loss")
        for replicate in np.flatnonzero(bad):
            self._isolated(replicate, batch, "non-finite validation loss")
        self._unless_all_diverged(np.where(bad, batch, diverged_at))
        return bad

    def _isolated(self, replicate: int, batch: int, why: str) -> None:
        logger.warning(
            "Replicate %d diverged at batch %d (%s): it keeps its parameters after %d "
            "batches and is flagged in history.zarr's diverged_at; the other replicates "
            "train on (train.on_divergence: isolate).",
            replicate,
            batch,
            why,
            batch,
        )

    def _unless_all_diverged(self, diverged_at: np.ndarray) -> None:
        """Say once that every replicate has diverged. The run goes on to its end (its
        frozen replicates take no step), so that its results are written, each flagged:
        under ``isolate`` a diverged replicate is a result, as a sweep's value that
        diverges is (`best_setting` ranks it last)."""
        if (diverged_at != HEALTHY).all() and not self._said_all:
            self._said_all = True
            logger.warning(
                "Every replicate has diverged (the last at batch %d): the run goes on to "
                "its end without updates, and its results are written, every replicate "
                "flagged in diverged_at. Lower the learning rate (or see "
                "train.on_divergence) to train them.",
                int(diverged_at.max()),
            )

    def _error(self, batch: int, replicates: np.ndarray, terms, what: str) -> NonFiniteLossError:
        return NonFiniteLossError(
            batch=batch,
            replicates=[int(r) for r in np.flatnonzero(replicates)],
            terms=terms,
            resume_hint=self.resume_hint(),
            what=what,
        )


def _cause(losses: dict[str, np.ndarray], offset: int, which: np.ndarray) -> tuple[list, str]:
    """The non-finite loss terms of the replicates `which` at chunk step `offset`, and
    what diverged: the training loss, or (with finite losses) the parameters."""
    if np.isfinite(losses["total"][offset, which]).all():
        return ["the trainable parameters"], "parameters"
    terms = [
        name
        for name, value in losses.items()
        if name != "total" and not np.isfinite(value[offset, which]).all()
    ]
    return terms or ["total"], "training loss"
