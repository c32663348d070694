"""The controller: a recurrent cell, optional hidden noise, a linear readout of controls."""

from __future__ import annotations

import equinox as eqx
import jax
from jaxtyping import Array, Float, PRNGKeyArray

from .._cells import AbstractCell
from ._setting import Setting


class Network(eqx.Module):
    """Recurrent network whose readout is the plant's control (a force, torques, excitations).

    **Arguments:**

    - `cell`: the recurrent cell.
    - `readout`: linear map from the hidden state to the plant's controls.
    - `hidden_noise_std`: std of Gaussian noise added to the hidden state each step
      (an array :class:`Setting`, so that noise levels share compiled programs).
    - `n_substeps`: the cell's updates per step of the loop (the cell's own step is
      the loop's `dt` divided by this), each seeing the same input; the output is
      the readout of the last. Sussillo & Abbott (2009, Neuron 63:544) integrate
      their network with a step of a tenth of its time constant.
    - `output_feedback`: None, or weights ``[hidden, control]`` through which the
      readout of the current hidden state drives the cell at every sub-step (FORCE's
      ``J^Gz z``, Sussillo & Abbott 2009; the cell must take a `drive`, like
      :class:`motorflow._cells.ReservoirCell`).
    """

    cell: AbstractCell
    readout: eqx.nn.Linear
    hidden_noise_std: Setting
    n_substeps: int = eqx.field(static=True, default=1)
    output_feedback: Float[Array, "hidden control"] | None = None

    def __call__(
        self,
        input: Float[Array, " input"],
        hidden: Float[Array, " hidden"],
        *,
        key: PRNGKeyArray,
    ) -> tuple[Float[Array, " hidden"], Float[Array, " control"]]:
        """One step: returns the new hidden state and the output."""
        for _ in range(self.n_substeps):
            if self.output_feedback is None:
                hidden = self.cell(input, hidden)
            else:
                hidden = self.cell(input, hidden, drive=self.output_feedback @ self.readout(hidden))
        if self.hidden_noise_std.nonzero:
            noise = jax.random.normal(key, hidden.shape)
            hidden = hidden + self.hidden_noise_std.value * noise
        return hidden, self.readout(hidden)
