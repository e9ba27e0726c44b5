# one LABEL [ENV=VALUE ...] -- PROGRAM: fusec run --bench --back-to-back, one line of figures
one() { # label env... -- program
  local label=$1; shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  local f=$1
  env "${envs[@]}" build/tools/fusec run "$f" --backend cuda --bench --runs 30 --warmup 5 --back-to-back --json 2>/dev/null |
    python3 -c '
import json,sys
label,f=sys.argv[1],sys.argv[2]
for line in sys.stdin:
    line=line.strip()
    if not line.startswith("{"): continue
    try: r=json.loads(line)
    except Exception: continue
    if "median_ms" not in r: continue
    b=r.get("b2b") or {}
    print("%-24s %-22s %8.4f ms %5.1f%%  b2b %8.4f %5.1f%%" % (f.split("/")[-1][:-3], label, r["median_ms"], r.get("floor_pct") or 0, b.get("median_ms") or 0, b.get("floor_pct") or 0))
' "$label" "$f"
}
