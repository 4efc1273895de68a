#!/bin/bash
# Assemble the lab's output folder of issue 29's third session (clip scaling, and T5 if it ran) from its pilot/run folders, then
# report with --carry: the experiments whose runs are not here (T1, T2, T4, T6, T8) are carried from the committed summary.
set -e
F=/work/labfinal3
rm -rf $F; mkdir -p $F/pilots $F/runs $F/initial
cd /work/main
# audit: the committed one (same engine), overridden by what this session measured (new policies' weights included)
python - <<'PY'
import json, os
merged = json.load(open("bench/lab/audit.json"))
for d in ["/work/labclip2", "/work/lab5b"]:
    p = os.path.join(d, "audit.json")
    if os.path.exists(p):
        new = json.load(open(p))
        assert new["engine_sha256"] == merged["engine_sha256"]
        for key, value in new.items():
            if key.startswith("weights/") and merged.get(key) not in (None, value):
                prefix = "/".join(key.split("/")[1:3]) + "/"   # e.g. sumk/recheck/: measures of older weights go
                for k in [k for k in merged if k.startswith(prefix)]:
                    del merged[k]
        merged.update(new)
json.dump(merged, open("/work/labfinal3/audit.json", "w"), indent=2)
PY
# pilots: committed ones for unchanged definitions; this session's for the rest (later dirs win)
cp bench/lab/pilots/*.json $F/pilots/
for d in /work/labclip2 /work/lab5b; do
  [ -d $d/pilots ] && cp $d/pilots/*.json $F/pilots/ || true
  [ -d $d/initial ] && cp -n $d/initial/*.json $F/initial/ 2>/dev/null || true
  [ -d $d/runs ] && for r in $d/runs/*; do [ -e $F/runs/$(basename $r) ] || ln -s $r $F/runs/; done || true
done
. .venv/bin/activate
python -c "from trl_lite.lab.audit import audit_markdown; import json; open('/work/labfinal3/audit.md','w').write(audit_markdown(json.load(open('/work/labfinal3/audit.json'))))"
trl-lite lab report all --output-dir $F --carry bench/lab/summary.json
