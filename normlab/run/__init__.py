"""One run, from its config to its run directory: the runner, the training loop, checkpoints and
resume, the run directory contract, stop signals, precision and devices, data-parallel training,
progress and the console log."""
