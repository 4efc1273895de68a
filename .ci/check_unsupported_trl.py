"""TRL releases outside the supported range, forced next to the installed stack (`pip install --no-deps`), as a user
whose environment pins another TRL would get them: `import trl_lite` works, and building a config or a trainer fails
at once with the contract's error (trl_lite/trl_contract.py), not with a traceback from inside TRL.

    python .ci/check_unsupported_trl.py 1.13.0 1.15.0

1.13.0 lacks a helper trl-lite imports; 1.15.0 is refused where Triton is missing (CI's CPU machines), since its
log-prob path cannot run there (trl_lite/trl_contract.py, `_release_problems`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USER = """
import sys, tempfile
import trl_lite  # must not fail on TRL
print("import trl_lite: ok", flush=True)
from trl_lite import LitePPOConfig, LitePPOTrainer  # must not fail on TRL either
print("from trl_lite import LitePPOConfig, LitePPOTrainer: ok", flush=True)
from tests.tiny import build_tiny_model, prompt_dataset, reward_digit_count, train_args
tmp = tempfile.mkdtemp()
model = build_tiny_model(tmp + "/model")
LitePPOTrainer(model=model, reward_funcs=reward_digit_count, args=LitePPOConfig(**train_args(tmp)),
               train_dataset=prompt_dataset())
print("built a trainer: this TRL was expected to be refused", flush=True)
"""


def check(version: str, workdir: str) -> None:
    target = os.path.join(workdir, f"trl-{version}")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, f"trl=={version}"],
                   check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([target, REPO])}
    result = subprocess.run([sys.executable, "-c", USER], cwd=REPO, env=env, capture_output=True, text=True)
    out, err = result.stdout, result.stderr
    raised = [line for line in err.splitlines() if line.startswith("trl_lite.trl_contract.TRLContractError")]
    last = raised[-1] if raised else (err.strip().splitlines()[-1] if err.strip() else "")
    frames = [line for line in err.splitlines() if line.strip().startswith("File ")]
    inside_trl = [line for line in frames if os.path.join(target, "trl") in line]
    print(f"TRL {version}: {'; '.join(line for line in out.splitlines() if line.endswith(': ok'))}")
    print(f"TRL {version}: {last[:300]}")
    problems = []
    if "import trl_lite: ok" not in out or "LitePPOTrainer: ok" not in out:
        problems.append("importing trl_lite failed")
    if result.returncode == 0 or not last.startswith("trl_lite.trl_contract.TRLContractError"):
        problems.append("no TRLContractError")
    if f"installed TRL {version}" not in err:
        problems.append("the error does not name the installed TRL")
    if inside_trl:
        problems.append(f"the traceback reaches inside TRL: {inside_trl[-1].strip()}")
    if problems:
        sys.stderr.write(err[-4000:])
        raise SystemExit(f"TRL {version}: {'; '.join(problems)}")


def main() -> None:
    versions = sys.argv[1:] or ["1.13.0", "1.15.0"]
    with tempfile.TemporaryDirectory() as workdir:
        for version in versions:
            check(version, workdir)


if __name__ == "__main__":
    main()
