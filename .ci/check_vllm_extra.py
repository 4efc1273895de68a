"""CI: `pip install ".[vllm]"` must resolve to a vLLM inside the range TRL supports (read from TRL's own metadata).

A dry run with a report: vLLM's wheels pull CUDA builds, so nothing is installed. Exits non-zero, naming both
versions, when the resolver picks a vLLM outside TRL's range or cannot resolve at all.
"""

import json
import subprocess
import sys
import tempfile
from importlib.metadata import requires

from packaging.requirements import Requirement

trl_vllm = [Requirement(r) for r in requires("trl") if r.startswith("vllm") and 'extra == "vllm"' in r]
if not trl_vllm:
    sys.exit("trl declares no vllm requirement in its 'vllm' extra; cannot check the range")
spec = trl_vllm[0].specifier
with tempfile.NamedTemporaryFile(suffix=".json") as report:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", report.name, ".[vllm]"],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        sys.exit(f'pip could not resolve ".[vllm]":\n{result.stderr[-3000:]}')
    installs = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in json.load(report)["install"]}
if "vllm" not in installs:
    sys.exit('".[vllm]" resolved without installing vLLM')
version = installs["vllm"]
if version not in spec:
    sys.exit(f'".[vllm]" resolves to vLLM {version}, outside the range TRL supports ({spec})')
print(f'".[vllm]" resolves to vLLM {version}, inside the range TRL supports ({spec}); '
      f"transformers {installs.get('transformers', '(already installed)')}")
