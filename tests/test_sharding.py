"""The replicate axis spread over several devices gives the results of one device."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).parent

TRAIN = """
import sys, jax, numpy as np
sys.path.insert(0, {tests!r})
from conftest import TinySetup
import motorflow as mf
setup = TinySetup(n_replicates={n_replicates}, shared_trials={shared}, **{controls!r})
result = setup.train(checkpoint_dir={checkpoints!r})
trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
leaves = jax.tree.leaves((result.state.params, result.state.opt_state, result.history))
np.savez({out!r}, n_devices=len(jax.devices()),
         mesh=0 if trainer.layout.mesh is None else trainer.layout.mesh.size,
         padded=trainer.layout.n_padded,
         **{{f"leaf{{i}}": np.asarray(x) for i, x in enumerate(leaves)}})
"""


def train_on(n_devices, tmp_path, n_replicates, shared=False, controls=None):
    out = tmp_path / f"{n_devices}-{n_replicates}-{shared}.npz"
    code = TRAIN.format(
        tests=str(TESTS),
        n_replicates=n_replicates,
        shared=shared,
        controls=controls or {},
        checkpoints=str(tmp_path / f"ckpt-{n_devices}-{n_replicates}-{shared}"),
        out=str(out),
    )
    # Every program XLA compiles, as it runs it (the persistent cache would skip them).
    programs = tmp_path / f"programs-{n_devices}-{n_replicates}-{shared}"
    flags = f"--xla_force_host_platform_device_count={n_devices} --xla_dump_to={programs}"
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_ENABLE_COMPILATION_CACHE": "false"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return {**np.load(out), "collectives": collectives(programs)}


COLLECTIVE = re.compile(
    r"= [^=]*\b(all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter)(-start)?\("
)


def collectives(programs: Path) -> dict[str, list[str]]:
    """Each compiled program that exchanges data between devices, and its exchanges."""
    found = {}
    for program in sorted(programs.glob("*after_optimizations.txt")):
        ops = sorted({match.group(1) for match in COLLECTIVE.finditer(program.read_text())})
        if ops:
            found[program.name] = ops
    assert any(programs.glob("*run_chunk*after_optimizations.txt")), "no program was dumped"
    return found


# Training controls that mask the optimizer per batch (stages, a matrix changed only by
# an update rule) and record more (snapshots, gradient norms per term).
CONTROLS = {
    "trainable": ["network.readout"],
    "stages": [{"at": 20, "trainable": ["network"]}],
    "update_rules": [{"kind": "oja", "rate": 0.05, "batches": {"every": 3}}],
    "snapshots": {"batches": {"every": 10}},
    "gradient_norms": "per_term",
}


# Shared trials, and 3 replicates padded to 4 on two devices (with every training
# control), cover the sharded paths; a plain run of 4 unshared replicates would add
# nothing to them but half a minute.
@pytest.mark.parametrize(
    ("n_replicates", "shared", "padded", "controls"),
    [(4, True, 4, None), (3, False, 4, CONTROLS)],
)
def test_two_devices_train_bit_identically_to_one(tmp_path, n_replicates, shared, padded, controls):
    one = train_on(1, tmp_path, n_replicates, shared, controls)
    two = train_on(2, tmp_path, n_replicates, shared, controls)
    assert two["n_devices"] == 2 and two["mesh"] == 2 and two["padded"] == padded
    assert one["mesh"] == 0
    # Replicates are independent: no program waits on another device (a collective's
    # rendezvous, which XLA aborts when a busy machine starves one device's thread).
    assert two.pop("collectives") == {} == one.pop("collectives")
    assert one.keys() == two.keys()
    for name in one:
        if name.startswith("leaf"):
            np.testing.assert_array_equal(one[name], two[name], err_msg=name)


SAVE = """
import sys, jax, numpy as np
sys.path.insert(0, {tests!r})
from conftest import TinySetup
import motorflow as mf
setup = TinySetup(n_replicates=4)
result = setup.train(checkpoint_dir={checkpoints!r})
if {save}:
    mf.save_ensemble({model!r}, result.ensemble, setup.model_config, n_task_inputs=2)
loaded, _ = mf.load_ensemble({model!r})
leaves = jax.tree.leaves((result.state, result.history)) + jax.tree.leaves(loaded)
np.savez({out!r}, n_devices=len(jax.devices()),
         resumed_from_batch=result.record["resumed_from_batch"], **{{
    f"leaf{{i}}": np.asarray(jax.random.key_data(x) if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key) else x)
    for i, x in enumerate(leaves)}})
"""


def test_state_and_model_written_on_two_devices_are_read_on_one(tmp_path):
    def run(n_devices, save):
        out = tmp_path / f"{n_devices}.npz"
        code = SAVE.format(
            tests=str(TESTS),
            checkpoints=str(tmp_path / "ckpt"),
            model=str(tmp_path / "model"),
            save=save,
            out=str(out),
        )
        env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n_devices}"}
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        return dict(np.load(out))

    two = run(2, save=True)
    one = run(1, save=False)  # resumes from the final checkpoint; loads the saved model
    assert (two["n_devices"], one["n_devices"]) == (2, 1)
    assert (two["resumed_from_batch"], one["resumed_from_batch"]) == (0, 40)
    for name in two:
        if name.startswith("leaf"):
            np.testing.assert_array_equal(one[name], two[name], err_msg=name)
