"""The TRL canary: run in a venv that holds the newest TRL on PyPI (whatever our upper bound says), it checks the
contract (trl_lite/trl_contract.py) on TRL's classes and on a built trainer, runs the TRL-parity, differences and
contract tests, and prints one line:

    TRL canary: X.Y.Z contract holds
    TRL canary: X.Y.Z breaks: <names>

It exits 1 only when that TRL is inside the supported range and something breaks; a newer release that breaks is
reported, not fatal (the range does not claim it yet).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = ["tests/trainer/test_trainer_parity.py", "tests/trainer/test_trl_differences.py", "tests/config/test_trl_contract.py"]


def _contract_breaks() -> list[str]:
    """The names the contract's error lists, checked on the classes and on a trainer built on the tiny model."""
    sys.path.insert(0, REPO)
    from trl_lite import trl_contract

    try:
        trl_contract.check_trl()
        from tests.tiny import build_tiny_model, prompt_dataset, reward_digit_count, train_args
        from trl_lite import LitePPOConfig, LitePPOTrainer

        with tempfile.TemporaryDirectory() as tmp:
            model = build_tiny_model(os.path.join(tmp, "model"))
            LitePPOTrainer(model=model, reward_funcs=reward_digit_count, args=LitePPOConfig(**train_args(tmp)),
                           train_dataset=prompt_dataset())  # runs check_trainer
    except trl_contract.TRLContractError as error:
        return re.findall(r"^  - (\S+) \(", str(error), flags=re.MULTILINE)
    return []


def _failed_tests() -> list[str]:
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", *TESTS],
                            cwd=REPO, capture_output=True, text=True)
    sys.stdout.write(result.stdout[-3000:])
    failed = re.findall(r"^FAILED (\S+)", result.stdout, flags=re.MULTILINE)
    if result.returncode != 0 and not failed:  # collection errors, crashes
        failed = [f"pytest exit {result.returncode}"]
    return failed


def main() -> int:
    from trl_lite import trl_contract

    version = trl_contract.trl_version()
    breaks = _contract_breaks()
    breaks += [name.split("::")[-1] for name in _failed_tests()]
    inside = trl_contract.in_supported_range(version)
    where = "inside" if inside else "outside"
    if breaks:
        print(f"TRL canary: {version} breaks: {', '.join(breaks)}")
        print(f"(TRL {version} is {where} the supported range trl{trl_contract.SUPPORTED_TRL})")
        return 1 if inside else 0
    print(f"TRL canary: {version} contract holds")
    print(f"(TRL {version} is {where} the supported range trl{trl_contract.SUPPORTED_TRL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
