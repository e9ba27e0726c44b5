#!/usr/bin/env python3
"""rows.py FUSEC_JSON - one line a workload of bench/fusec_runs.py's JSON: median, back-to-back
median, kernels, % of the copy floor."""
import json
import sys

w = json.load(open(sys.argv[1]))['workloads']
for k, v in w.items():
    r = v.get('result') or {}
    b = r.get('b2b') or {}
    print('%-18s %8.4f ms  b2b %8s  kernels %s  floor %5.1f%%  %s' % (
        k, r.get('median_ms') or 0, '%.4f' % b['median_ms'] if b.get('median_ms') else '-',
        r.get('kernels'), r.get('floor_pct') or 0, v.get('error') or ''))
