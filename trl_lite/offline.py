"""An unreachable Hugging Face Hub, told apart from other failures: for the command-line entry points (`trl-lite
train`, `trl-lite eval`), which exit with one line naming what could not be reached and what to pass instead, not a
traceback. Checking an error imports nothing (neither datasets nor an HTTP client): classes are matched by name."""

from __future__ import annotations

import os

# Exception classes, by name anywhere in their MRO, that mean the Hub (or the network) could not be reached: the
# Hub client's offline and cache-miss errors, and the transport errors of requests / urllib3 / httpx / httpx2.
# Matched by name so that checking an error imports nothing (neither datasets nor an HTTP client).
_UNREACHABLE_NAMES = frozenset({
    "OfflineModeIsEnabled",  # huggingface_hub, HF_HUB_OFFLINE=1
    "LocalEntryNotFoundError",  # huggingface_hub: not in the cache and the Hub not reachable (or offline)
    "ConnectionError",  # builtins (datasets' "Couldn't reach 'X' on the Hub"), requests
    "ConnectError", "ConnectTimeout", "NetworkError",  # httpx, httpx2, httpcore
    "NewConnectionError", "NameResolutionError", "MaxRetryError", "ConnectTimeoutError",  # urllib3
})
_OFFLINE_ONLY_NAMES = frozenset({"DatasetNotFoundError"})  # datasets: also "does not exist / is gated" when online
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")


def _offline() -> bool:
    """Whether offline mode is on (`HF_HUB_OFFLINE=1` or the datasets / transformers equivalents)."""
    if any(os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE") for name in _OFFLINE_VARIABLES):
        return True
    from huggingface_hub import constants

    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def _chain(err: BaseException):
    """`err` and the exceptions it was raised from or while handling (`__cause__`, `__context__`), each once."""
    seen, todo = set(), [err]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__]


def hub_unreachable(err: BaseException) -> bool:
    """Whether `err` (or an exception in its `__cause__` / `__context__` chain) means the Hugging Face Hub could not be
    reached: offline mode (`HF_HUB_OFFLINE=1`), no network, or a file neither cached nor downloadable. True for
    huggingface_hub's `OfflineModeIsEnabled` and `LocalEntryNotFoundError`, connection errors (datasets' "Couldn't
    reach 'X' on the Hub", requests', urllib3's, httpx's), and datasets' `DatasetNotFoundError` while offline. False for
    anything else, e.g. a missing local file, a bad argument, or a repository that the reachable Hub says does not
    exist."""
    offline = None
    for current in _chain(err):
        # ConnectionError's OS subclasses are about a socket or pipe, often a local one (a worker process, a server
        # of the run's own); the Hub client's failures come as the classes named above
        if isinstance(current, (BrokenPipeError, ConnectionResetError, ConnectionRefusedError, ConnectionAbortedError)):
            continue
        names = {cls.__name__ for cls in type(current).__mro__}
        if names & _UNREACHABLE_NAMES:
            return True
        if names & _OFFLINE_ONLY_NAMES:
            offline = _offline() if offline is None else offline
            if offline:
                return True
    return False


def unreachable_message(kind: str, name: str, alternative: str) -> str:
    """One line for a command to exit with when `hub_unreachable(err)`: what could not be reached and what to pass
    instead, e.g. `unreachable_message("dataset", "HuggingFaceH4/MATH-500", "pass --data-dir DIR with math500.jsonl")`
    -> "trl-lite: cannot reach the Hugging Face Hub for dataset 'HuggingFaceH4/MATH-500' (offline: HF_HUB_OFFLINE is
    set); pass --data-dir DIR with math500.jsonl"."""
    reason = "offline: HF_HUB_OFFLINE is set" if _offline() else "no connection, or not in the local cache"
    line = f"trl-lite: cannot reach the Hugging Face Hub for {kind} {name!r} ({reason}); {alternative}"
    return " ".join(line.split())  # one line, whatever the arguments hold
