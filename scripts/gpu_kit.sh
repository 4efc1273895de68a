#!/usr/bin/env bash
# gpu_kit.sh: the carry kit for the air-gapped GPU machines (nvidia-h100-x1, nvidia-h200).
#
# Usage (in the repository, on a machine that reaches PyPI):
#     bash scripts/gpu_kit.sh                 # fill .gpu_kit/ (skipping wheels already there), then check it
#     bash scripts/gpu_kit.sh --clean         # empty .gpu_kit/ first and rebuild it from scratch
#     bash scripts/gpu_kit.sh --import-test   # also import the kit under this machine's Python (see step 5)
#     GPU_KIT_VENV=/some/venv bash scripts/gpu_kit.sh   # scratch venv (default /tmp/kitvenv)
#     GPU_KIT_MACHINE=freeze.txt bash scripts/gpu_kit.sh  # the GPU machine's packages (default scripts/gpu_machine.txt)
# Exit status: 0 when the kit is filled and every check passes, 1 when a check fails.
#
# What it does, and why:
# 1. Scratch venv (this machine's python3): torch 2.13.0 (a CPU build, from local disk), setuptools and wheel to build
#    DeepSpeed's wheel, and a recent pip (pip 23's resolver backtracks for many minutes on step 3 and downloads whole
#    torch wheels; a recent one reads PyPI's metadata files and resolves in seconds).
# 2. Fills .gpu_kit/ with exactly the wheels the GPU machine lacks for `python3 scripts/gpu_check.py --no-vllm`
#    (which imports trl, datasets, peft, transformers, accelerate, deepspeed and trl_lite; trl_lite comes from the
#    working tree, peft, transformers and accelerate are on the machine), at the reference pins (.ci/reference.txt)
#    where they fit the GPU machine's packages. Cross-downloaded for CPython 3.12
#    on manylinux x86_64 (the GPU machine) with --no-deps: every dependency is named in KIT below. DeepSpeed
#    publishes only an sdist, so its wheel is built here, pure Python, with DS_BUILD_OPS=0: its ops are compiled
#    just in time on the GPU machine (it has nvcc and ninja). A wheel of another version or package is removed, so
#    that the kit holds one version of each (two stop the install there).
# 3. Checks that the kit resolves with the GPU machine's packages: a dry-run `pip install --report` against PyPI of
#    trl-lite's dependencies (pyproject.toml) plus trl[deepspeed], for Python 3.12 / manylinux, constrained to the
#    GPU machine's known versions (scripts/gpu_machine.txt) and the kit's. From its report, it walks the
#    requirements from those roots, stopping at packages the GPU machine has: what it reaches that the GPU machine
#    lacks must be the kit, no more and no less. (A package only a GPU-side package pulls in, at the newest version
#    the resolver picked for it, is the GPU's own business: it is shown, not counted.) Requirements on GPU-side
#    packages whose version gpu_machine.txt doesn't give are listed as unverified: a full `pip list --format=freeze`
#    read there, put in gpu_machine.txt, verifies them too.
# 4. Checks that the kit plus the working tree (what travels: tracked and untracked-not-ignored files) fits in the
#    64 MiB a device call carries, and prints the command that installs the kit there and runs the check.
# 5. (--import-test) Imports the kit under this machine's Python 3.11 (not the GPU's 3.12: only its pure-Python
#    wheels can be used as they are; pydantic-core and multiprocess are installed for 3.11 at the same versions),
#    with transformers/accelerate/huggingface_hub/tokenizers/safetensors at the GPU machine's versions, then
#    imports trl_lite from the tree: catches an import-time break between trl 1.16 and transformers 5.17.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KIT=.gpu_kit
MACHINE=${GPU_KIT_MACHINE:-scripts/gpu_machine.txt}
VENV=${GPU_KIT_VENV:-/tmp/kitvenv}
LIMIT_BYTES=$((64 * 1024 * 1024))

# The kit: what the GPU machine lacks (read each package's Requires-Dist), at the reference pins.
#   trl 1.16.0: needs accelerate>=1.10.1, transformers>=4.56.2 (!=5.1.0 with [deepspeed]), datasets>=4.7.0,
#               huggingface_hub>=0.34.0, pandas, pyarrow>=21, psutil, pyyaml, jinja2, numpy, packaging
#   datasets 5.2.0: huggingface-hub>=1.31.0,<3.0 (1.33.0 there), fsspec<=2026.9.0, pyarrow>=24.0.0,
#               dill<0.4.2, multiprocess<0.70.20, pandas, xxhash, tqdm, pyyaml, filelock, numpy, packaging
#   evaluate 0.4.6: datasets, dill, multiprocess, fsspec[http], huggingface-hub, pandas, requests, xxhash, ...
#   math-verify 0.9.0 -> latex2sympy2_extended==1.11.0 -> antlr4-python3-runtime>=4.9.3,<=4.13.2, sympy
#   deepspeed 0.19.8: hjson, pydantic>=2, einops, msgpack, ninja, numpy, packaging, psutil, py-cpuinfo, torch, tqdm
#   pydantic 2.14.4 -> pydantic-core==2.50.5, annotated-types>=0.6, typing-inspection>=0.4.4, typing-extensions>=4.16
KIT_PINS=(
    trl==1.16.0
    datasets==5.2.0
    dill==0.4.1
    multiprocess==0.70.19
    evaluate==0.4.6
    math-verify==0.9.0
    latex2sympy2_extended==1.11.0
    antlr4-python3-runtime==4.13.2
    hjson==3.1.0
    pydantic==2.14.4
    pydantic_core==2.50.5
    annotated-types==0.8.0
    typing-inspection==0.4.5
)
DEEPSPEED_PIN=deepspeed==0.19.8
# what the kit provides for, beyond pyproject.toml's dependencies: gpu_check.py's zero3 check imports deepspeed
EXTRA_ROOTS=("trl[deepspeed]")

# The GPU machine: CPython 3.12 on x86_64 glibc (3.12.3 is Ubuntu 24.04's, whose glibc is 2.39). pip matches manylinux_2_N tags
# exactly, so all of them are named (torch 2.11's nvidia-nccl-cu13 wheel, for one, is none of 2_17/2_27/2_28).
PLATFORM_ARGS=(--python-version 3.12 --implementation cp --only-binary=:all:)
for n in $(seq 39 -1 17); do PLATFORM_ARGS+=(--platform "manylinux_2_${n}_x86_64"); done
PLATFORM_ARGS+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)

CLEAN=0; IMPORT_TEST=0
for arg in "$@"; do
    case $arg in
        --clean) CLEAN=1 ;;
        --import-test) IMPORT_TEST=1 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

quiet_pip() { grep -v "is ignored: it is neither a file nor a directory" || true; }  # this machine's pip config
WORK=$(mktemp -d /tmp/gpu_kit.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

echo "== 1. scratch venv: $VENV"
if [[ ! -x $VENV/bin/python ]]; then python3 -m venv "$VENV"; fi
if ! "$VENV/bin/python" -c 'import torch, setuptools, wheel, pip, sys; sys.exit(int(pip.__version__.split(".")[0]) < 24)' 2>/dev/null
then
    "$VENV/bin/python" -m pip install -q torch==2.13.0 setuptools wheel "pip>=24" 2>&1 | quiet_pip
fi
PIP=("$VENV/bin/python" -m pip)

echo "== 2. wheels in $KIT/"
[[ $CLEAN == 1 ]] && rm -rf "$KIT"
mkdir -p "$KIT"
# one helper for wheel names: `have NAME==VERSION` (is it in the kit?) and `prune PIN...` (remove all else)
kit_py() {
    "$VENV/bin/python" - "$KIT" "$@" <<'EOF'
import os, re, sys
kit, cmd, pins = sys.argv[1], sys.argv[2], sys.argv[3:]
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
want = {(norm(p.split("==")[0]), p.split("==")[1]) for p in pins}
def key(f):  # a wheel's file name: {name}-{version}(-{build})?-{python}-{abi}-{platform}.whl
    parts = f[:-4].split("-")
    return norm(parts[0]), parts[1]
files = [f for f in os.listdir(kit)]
if cmd == "have":
    sys.exit(0 if any(f.endswith(".whl") and key(f) in want for f in files) else 1)
for f in files:  # prune
    if not f.endswith(".whl") or key(f) not in want:
        print(f"   removing {f} (not in the kit's pins)")
        os.remove(os.path.join(kit, f))
EOF
}
kit_py prune "${KIT_PINS[@]}" "$DEEPSPEED_PIN"
for pin in "${KIT_PINS[@]}"; do
    if kit_py have "$pin"; then echo "   have $pin"; continue; fi
    echo "   downloading $pin"
    "${PIP[@]}" download -q --no-deps "${PLATFORM_ARGS[@]}" -d "$KIT" "$pin" 2>&1 | quiet_pip
done
if kit_py have "$DEEPSPEED_PIN"; then echo "   have $DEEPSPEED_PIN"; else
    echo "   building $DEEPSPEED_PIN from its sdist (DS_BUILD_OPS=0: ops JIT-compiled on the GPU machine)"
    DS_BUILD_OPS=0 "${PIP[@]}" wheel -q --no-cache-dir --no-deps --no-build-isolation -w "$KIT" "$DEEPSPEED_PIN" \
        2>&1 | quiet_pip
fi
kit_py prune "${KIT_PINS[@]}" "$DEEPSPEED_PIN"   # e.g. a second wheel for a pin (another platform tag)
# every pin exactly once, DeepSpeed pure Python (no prebuilt op that would expect this machine's CPU torch)
"$VENV/bin/python" - "$KIT" "${KIT_PINS[@]}" "$DEEPSPEED_PIN" <<'EOF'
import collections, os, re, sys, zipfile
kit, pins = sys.argv[1], sys.argv[2:]
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
count = collections.Counter(norm(f.split("-")[0]) for f in os.listdir(kit))
bad = [p for p in pins if count[norm(p.split("==")[0])] != 1]
ds = [f for f in os.listdir(kit) if f.startswith("deepspeed-")]
if ds and (not ds[0].endswith("-py3-none-any.whl") or any(n.endswith(".so") for n in zipfile.ZipFile(os.path.join(kit, ds[0])).namelist())):
    bad.append(ds[0] + " is not pure Python")
if bad:
    sys.exit("FAIL: not exactly one wheel each: " + ", ".join(bad))
EOF
mib() { awk -v b="$1" 'BEGIN {printf "%.2f", b / 1048576}'; }
KIT_BYTES=0
while read -r size name; do
    printf '   %6s MiB  %s\n' "$(mib "$size")" "$name"
    KIT_BYTES=$((KIT_BYTES + size))
done < <(cd "$KIT" && stat -c '%s %n' ./*.whl | sed 's| \./| |' | sort -k2)
printf '   %6s MiB  in all (%d wheels)\n' "$(mib "$KIT_BYTES")" "$(ls "$KIT"/*.whl | wc -l)"

echo "== 3. resolution with the GPU machine's packages ($MACHINE)"
# constraints: every `name==version` of gpu_machine.txt (local label dropped: PyPI has torch 2.11.0, not +cu130) and
# the kit's own versions; roots: pyproject.toml's dependencies and EXTRA_ROOTS
"$VENV/bin/python" - "$MACHINE" "$KIT" "$WORK" "${EXTRA_ROOTS[@]}" <<'EOF'
import os, re, sys, tomllib
machine, kit, work, extra_roots = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pins = []
for line in open(machine):
    line = line.split("#")[0].strip()
    if "==" in line and " @ " not in line:
        name, version = (s.strip() for s in line.split("==", 1))
        pins.append(f"{name}=={version.split('+')[0]}")
pins += ["{}=={}".format(*f.split("-")[:2]) for f in sorted(os.listdir(kit))]
open(os.path.join(work, "constraints.txt"), "w").write("\n".join(pins) + "\n")
roots = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"] + extra_roots
open(os.path.join(work, "roots.txt"), "w").write("\n".join(roots) + "\n")
EOF
if ! "${PIP[@]}" install -q --dry-run --ignore-installed --report "$WORK/report.json" "${PLATFORM_ARGS[@]}" \
        --target "$WORK/target" --find-links "$KIT" -c "$WORK/constraints.txt" -r "$WORK/roots.txt" \
        > "$WORK/resolve.log" 2>&1; then
    quiet_pip < "$WORK/resolve.log"
    echo "FAIL: the kit's versions and the GPU machine's don't resolve together (above)"; exit 1
fi
"$VENV/bin/python" - "$MACHINE" "$KIT" "$WORK" <<'EOF'
import json, os, re, sys
try:
    from packaging.markers import Marker
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
except ImportError:  # pip's own copy
    from pip._vendor.packaging.markers import Marker
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.specifiers import SpecifierSet
machine, kit, work = sys.argv[1:4]
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
gpu = {}  # the GPU machine: name -> version, or None where unknown
for line in open(machine):
    line = line.split("#")[0].strip()
    if not line or line.startswith("-"):
        continue
    name = re.split(r"\s*(==|@)\s*", line)[0].strip()
    gpu[norm(name)] = line.split("==", 1)[1].split("+")[0].strip() if "==" in line else None
kit_versions = {norm(f.split("-")[0]): f.split("-")[1] for f in os.listdir(kit)}
report = {norm(i["metadata"]["name"]): i["metadata"] for i in json.load(open(os.path.join(work, "report.json")))["install"]}
env = dict(python_version="3.12", python_full_version="3.12.3", sys_platform="linux", platform_system="Linux",
           platform_machine="x86_64", os_name="posix", implementation_name="cpython", implementation_version="3.12.3",
           platform_python_implementation="CPython", platform_release="", platform_version="")

def applies(req, extras):
    return req.marker is None or any(req.marker.evaluate(dict(env, extra=e)) for e in extras | {""})

needed, unverified, failures = set(), [], []
todo = [(Requirement(r), "trl-lite") for r in open(os.path.join(work, "roots.txt")).read().split("\n") if r]
seen = set()
while todo:
    req, by = todo.pop()
    name = norm(req.name)
    if name in gpu:  # the GPU machine has it: its own dependencies are its business
        have = gpu[name]
        if have is None:
            if str(req.specifier):
                unverified.append(f"{req.name}{req.specifier} (by {by})")
        elif not req.specifier.contains(have, prereleases=True):
            failures.append(f"{by} needs {req}, the GPU machine has {have}")
        continue
    needed.add(name)
    if name not in report:
        failures.append(f"{req} (by {by}) is not in the resolution")
        continue
    key = (name, frozenset(req.extras))
    if key in seen:
        continue
    seen.add(key)
    meta = report[name]
    by_me = f"{meta['name']} {meta['version']}"
    for r in meta.get("requires_dist") or []:
        r = Requirement(r)
        if applies(r, set(req.extras)):
            todo.append((r, by_me))

kit_names = set(kit_versions)
for name in sorted(needed - kit_names):
    failures.append(f"missing from the kit: {name} {report.get(name, {}).get('version', '?')} (the GPU machine lacks it)")
for name in sorted(kit_names - needed):
    failures.append(f"in the kit but not needed (or on the GPU machine already): {name} {kit_versions[name]}")
for name in sorted(kit_names & set(report)):
    if report[name]["version"] != kit_versions[name]:
        failures.append(f"{name}: the resolution took {report[name]['version']}, the kit has {kit_versions[name]}")
others = sorted(f"{report[n]['name']} {report[n]['version']}" for n in set(report) - needed - set(gpu))
print(f"   resolved: {len(report)} packages for Python 3.12 / manylinux x86_64; the GPU machine lacks "
      f"{len(needed)} of those trl-lite and gpu_check need, the kit holds {len(kit_names)}:")
print("     " + ", ".join(f"{report[n]['name']} {report[n]['version']}" for n in sorted(needed & set(report))))
if others:
    print("   not counted (pulled in only by GPU-side packages at the versions the resolver picked for them, not the "
          "GPU's own): " + ", ".join(others))
if unverified:
    print(f"   unverified (the GPU machine has these packages, {machine} does not give their versions):")
    for u in sorted(set(unverified)):
        print("     " + u)
if failures:
    print("FAIL:\n" + "\n".join("   " + f for f in failures))
    sys.exit(1)
print("   OK: the kit is exactly what the GPU machine lacks, and resolves with its known versions")
EOF

echo "== 4. sizes (a device call carries 64 MiB: the working tree plus carried paths)"
TREE_BYTES=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
TOTAL=$((TREE_BYTES + KIT_BYTES))
echo "   working tree $(mib "$TREE_BYTES") MiB + kit $(mib "$KIT_BYTES") MiB = $(mib "$TOTAL") MiB of 64 MiB"
if ((TOTAL > LIMIT_BYTES)); then echo "FAIL: over 64 MiB"; exit 1; fi

if [[ $IMPORT_TEST == 1 ]]; then
    echo "== 5. import test under this machine's Python ($("$VENV/bin/python" -V)), not the GPU's 3.12"
    SITE=$WORK/site
    "${PIP[@]}" install -q --no-deps --no-compile --target "$SITE" "$KIT"/*-py3-none-any.whl 2>&1 | quiet_pip
    # the kit's two version-specific wheels, at the same versions, and the GPU machine's side at its versions
    pin_of() { printf '%s\n' "${KIT_PINS[@]}" | grep -i "^$1=="; }
    "${PIP[@]}" install -q "$(pin_of pydantic_core)" "$(pin_of multiprocess)" \
        transformers==5.17.0 accelerate==1.15.0 huggingface_hub==1.33.0 tokenizers==0.23.2 safetensors==0.8.0 \
        peft pyarrow pandas xxhash "fsspec[http]" requests pyyaml tqdm psutil py-cpuinfo msgpack einops ninja \
        sympy matplotlib scipy packaging jinja2 2>&1 | quiet_pip
    if ! PYTHONPATH=$SITE "$VENV/bin/python" -c '
import trl, datasets, deepspeed, evaluate, math_verify, pydantic, transformers, accelerate
from trl import GRPOConfig, GRPOTrainer
import trl_lite
from trl_lite import LitePPOConfig, LitePPOTrainer
for m in (trl, datasets, deepspeed, evaluate, math_verify, pydantic):
    assert m.__file__.startswith("'"$SITE"'"), m.__file__
print("   imported: trl", trl.__version__, "datasets", datasets.__version__, "deepspeed", deepspeed.__version__,
      "evaluate", evaluate.__version__, "pydantic", pydantic.__version__, "transformers", transformers.__version__,
      "accelerate", accelerate.__version__, "(kit from", "'"$SITE"')", "and trl_lite from the tree")' \
        > "$WORK/import.log" 2>&1; then
        cat "$WORK/import.log"; echo "FAIL: import test"; exit 1
    fi
    grep "imported:" "$WORK/import.log"
fi

echo "== the GPU machine: name .gpu_kit in the run's carry, and run"
echo "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu_kit/*.whl && export PYTHONPATH=/tmp/site && python3 scripts/gpu_check.py --no-vllm --out gpu_check.json"
