"""Imported by TRL's `vllm_client` (server mode) at import time; the stand-in covers colocate mode only."""

import socket


def get_ip() -> str:
    return socket.gethostbyname(socket.gethostname())


def get_open_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
