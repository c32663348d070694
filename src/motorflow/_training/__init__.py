"""Training an ensemble.

- `_trainer`: the pure, compiled functions (:class:`Trainer`: init, a chunk of
  batches, validation) over the state of `_state`; `_replicate_updates`: a batch's
  update of every replicate.
- `_driver`: the resumable :func:`train` around them: its loop, with `_validation`,
  `_resume`, `_checkpoint`, `_history` and `_run_identity`; what else a run does
  attaches as `_callbacks` (`_progress`, `_preemption`, `_run_record`, `_tensorboard`,
  checkpoint writes in `_resume`). `_packs`: several runs' chunks computed together
  (:func:`train_pack`), each run still its own `_driver` loop.
- `_config`: the training block of an experiment's config (:class:`TrainConfig`).
- What an update is made of: `rules/` (learning rules: how the gradient is found),
  `_optimizer` (optax), `_trainable` (which arrays train, in which stage),
  `_update_rules` (activity-dependent weight changes), `_constraints`, `_segments`
  (updates within a rollout), `_divergence`, `_schedule` and `_plan` (when to
  validate, log, checkpoint), `_sharding` (replicates over devices).
"""
