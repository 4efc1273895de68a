"""Imported by TRL's `vllm_client` (server mode) at import time; server mode is not part of the stand-in."""


def _server_mode_only(*args, **kwargs):
    raise NotImplementedError("the vLLM stand-in covers colocate mode only (no server, no NCCL weight transfer)")


trainer_init = packed_nccl_broadcast_producer = _server_mode_only
