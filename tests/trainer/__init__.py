"""The trainer: parity with TRL, exactness, resume, reward faults, the main job, evaluation and the ablation runner, in one process (subprocesses only for the vLLM stand-in)."""
