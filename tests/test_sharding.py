"""The replicate axis spread over several devices gives the results of one device."""

import os
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
setup = TinySetup(n_replicates={n_replicates}, shared_trials={shared})
result = setup.train(checkpoint_dir={checkpoints!r})
trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
leaves = jax.tree.leaves((result.state.params, result.state.opt_state, result.history))
np.savez({out!r}, n_devices=len(jax.devices()),
         mesh=0 if trainer.layout.mesh is None else trainer.layout.mesh.size,
         padded=trainer.layout.n_padded,
         **{{f"leaf{{i}}": np.asarray(x) for i, x in enumerate(leaves)}})
"""


def train_on(n_devices, tmp_path, n_replicates, shared=False):
    out = tmp_path / f"{n_devices}-{n_replicates}-{shared}.npz"
    code = TRAIN.format(
        tests=str(TESTS),
        n_replicates=n_replicates,
        shared=shared,
        checkpoints=str(tmp_path / f"ckpt-{n_devices}-{n_replicates}-{shared}"),
        out=str(out),
    )
    env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n_devices}"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return dict(np.load(out))


@pytest.mark.parametrize(
    ("n_replicates", "shared", "padded"), [(4, False, 4), (4, True, 4), (3, False, 4)]
)
def test_two_devices_train_bit_identically_to_one(tmp_path, n_replicates, shared, padded):
    one = train_on(1, tmp_path, n_replicates, shared)
    two = train_on(2, tmp_path, n_replicates, shared)
    assert two["n_devices"] == 2 and two["mesh"] == 2 and two["padded"] == padded
    assert one["mesh"] == 0
    assert one.keys() == two.keys()
    for name in one:
        if name.startswith("leaf"):
            np.testing.assert_array_equal(one[name], two[name], err_msg=name)
