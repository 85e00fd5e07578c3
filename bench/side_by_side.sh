#!/bin/bash
# Cold `evaluate` of two trees side by side, alternating, 2 runs each (wall, CPU, peak RSS, AP3D, load average).
# Cold means: a fresh process and an empty cache folder. The input files are read once before each run, so they
# are in the page cache as for a user who just wrote them (with DROP_CACHES=1, the kernel's caches are dropped
# instead: files, kernels and Python modules all come from disk, as after a reboot; needs root).
# steal_s: CPU time the hypervisor gave to other machines during the run (/proc/stat, both cores summed). These VMs
# share their hosts; the same commit ran 1.6-1.8x slower in busy hours, and steal is how a busy hour shows.
#   git archive <before-commit> | tar -x -C /tmp/before && (cd /tmp/before && python -m ov3d_core.geometry.jit)
#   bench/side_by_side.sh /tmp/before 1000 5000      # files from bench/bench_cold.py under /tmp/ov3d_bench_cold/N
set -e
before=$1; shift
after=$(cd "$(dirname "$0")/.." && pwd)
for n in "$@"; do
for rep in 1 2; do
for tree in "$before" "$after"; do
  cache=$(mktemp -d); out=$(mktemp --suffix .json); t=$(mktemp)
  if [ "${DROP_CACHES:-0}" = 1 ]; then sync; echo 3 > /proc/sys/vm/drop_caches; else cat /tmp/ov3d_bench_cold/$n/*.json > /dev/null; fi
  steal0=$(awk '/^cpu /{print $9}' /proc/stat)
  (cd "$tree" && /usr/bin/time -f "%e %U %S %M" -o "$t" python -m ov3d_core evaluate \
      --gt /tmp/ov3d_bench_cold/$n/gt.json --pred /tmp/ov3d_bench_cold/$n/preds.json --cache-dir "$cache" \
      --json "$out" > /dev/null 2>&1)
  steal1=$(awk '/^cpu /{print $9}' /proc/stat)
  read wall u s m < "$t"
  ap=$(python -c "import json, sys; d = json.load(open(sys.argv[1])); print(next(iter(d['datasets'].values()))['AP3D'])" "$out")
  echo "$n $tree rep$rep wall $wall cpu $(python -c "print(round($u + $s, 2))") rss_mib $((m / 1024)) AP3D $ap load $(cut -d' ' -f1 /proc/loadavg) steal_s $(python -c "print(round(($steal1 - $steal0) / $(getconf CLK_TCK), 2))")"
  rm -rf "$cache" "$out" "$t"
done; done; done
