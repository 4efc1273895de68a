#!/bin/bash
# Assemble one lab output folder from a session's pilot/run folders, then report with --carry: the experiments whose
# runs are not linked in are carried from the committed lab/results/summary.json (same engine, hashes, seeds, pilots).
#   bash lab/results/assemble.sh OUTPUT SOURCE_DIR...      (CARRY=PATH: carry from another summary.json)
#   issue 29's second session: bash lab/results/assemble.sh /work/labfinal /work/lab3 /work/lab3b /work/labclip /work/lab5 /work/lab6
#   issue 29's third session:  bash lab/results/assemble.sh /work/labfinal3 /work/labclip2 /work/lab5b
set -e
F=$1; shift
rm -rf "$F"; mkdir -p "$F/pilots" "$F/runs" "$F/initial"
cd "$(dirname "$0")/../.."
# audit: the committed one (same engine), overridden by what the session measured (new policies' weights included:
# the measures of a policy's older weights go)
python - "$F" "$@" <<'PY'
import json, os, sys
out, sources = sys.argv[1], sys.argv[2:]
merged = json.load(open("lab/results/audit.json"))
for d in sources:
    p = os.path.join(d, "audit.json")
    if os.path.exists(p):
        new = json.load(open(p))
        assert new["engine_sha256"] == merged["engine_sha256"]
        for key, value in new.items():
            if key.startswith("weights/") and merged.get(key) not in (None, value):
                prefix = "/".join(key.split("/")[1:3]) + "/"   # e.g. sumk/recheck/
                for k in [k for k in merged if k.startswith(prefix)]:
                    del merged[k]
        merged.update(new)
json.dump(merged, open(os.path.join(out, "audit.json"), "w"), indent=2)
PY
# pilots: the committed ones, then the session's (later folders win); initial evaluations and runs linked in
cp lab/results/pilots/*.json "$F/pilots/"
for d in "$@"; do
  [ -d "$d/pilots" ] && cp "$d"/pilots/*.json "$F/pilots/" || true
  [ -d "$d/initial" ] && cp -n "$d"/initial/*.json "$F/initial/" 2>/dev/null || true
  [ -d "$d/runs" ] && for r in "$d"/runs/*; do [ -e "$F/runs/$(basename "$r")" ] || ln -s "$r" "$F/runs/"; done || true
done
python -c "import json, sys; from trl_lite_lab.audit import audit_markdown; open(sys.argv[1] + '/audit.md', 'w').write(audit_markdown(json.load(open(sys.argv[1] + '/audit.json'))))" "$F"
trl-lite-lab report all --output-dir "$F" --carry "${CARRY:-lab/results/summary.json}"
