#!/usr/bin/env bash
# One lent GPU machine's whole check, in one call (the device time is short): what the machine
# is, bench/gpu_capture.sh's captures with the built llmwatch reading the real nvidia-smi at each
# moment, node-check's time idle (20 runs), and DCGM's answers where DCGM is installed. Reads
# only: changes no GPU setting (dcgmi diag runs its tests as a workload, nothing more).
#
# Usage: bench/device_check.sh OUTDIR LLMWATCH
#   (LLMWATCH: an llmwatch that runs there. A lent machine's image is not Debian's, so carry a
#   release build with its own loader and libraries: strip it into .devcarry/llmwatch.bin, copy
#   what `ldd` lists (ld-linux-x86-64.so.2 too) into .devcarry/lib/, and make .devcarry/llmwatch
#   `exec "$d/lib/ld-linux-x86-64.so.2" --library-path "$d/lib" "$d/llmwatch.bin" "$@"`, with
#   d its directory; .devcarry/ is git-ignored and named in the device call's carry.)
set -u
out=$1 llmwatch=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

{
  date -u
  grep -E '^(PRETTY_NAME)=' /etc/os-release
  nvidia-smi --version
  nvidia-smi -L
  for tool in dcgmi nv-hostengine; do command -v "$tool" || echo "no $tool"; done
  compgen -G '/usr/lib/x86_64-linux-gnu/*dcgm*' | head -5
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

PHASES=${PHASES:-alone contended job} timeout 420 bash "$here/gpu_capture.sh" "$out/capture" "$llmwatch"
echo "gpu_capture exit $?"

# node-check's own time on the real nvidia-smi, idle: 20 runs.
for _ in $(seq 20); do
  t0=$(date +%s.%N)
  "$llmwatch" -c "$out/capture/node-check.toml" node-check --node gpu-host >/dev/null 2>&1
  echo "$? $(awk "BEGIN { print $(date +%s.%N) - $t0 }")"
done >"$out/node-check-times.txt"
sort -k2 -n "$out/node-check-times.txt" | awk '{ t[NR] = $2; rc[$1]++ }
  END { printf "node-check idle: %d runs, min %.3f median %.3f max %.3f s; exits:", NR, t[1], t[int((NR + 1) / 2)], t[NR]
        for (r in rc) printf " %s x%d", r, rc[r]; print "" }'

if command -v dcgmi >/dev/null; then
  # exactly the fields llmwatch asks for
  fields=$(sed -n 's/.*kDcgmiDmonFields = "\([0-9,]*\)".*/\1/p' "$here/../src/probes/gpu/dcgmi_dmon.cpp")
  pgrep -x nv-hostengine >/dev/null || nv-hostengine >/dev/null 2>&1
  timeout 20 dcgmi discovery -l >"$out/dcgmi-discovery.txt" 2>&1
  timeout 20 dcgmi dmon -e "$fields" -c 3 >"$out/dcgmi-dmon-idle.txt" 2>&1
  python3 "$here/gpu_load.py" --seconds 30 &
  load=$!
  sleep 15
  timeout 20 dcgmi dmon -e "$fields" -c 3 >"$out/dcgmi-dmon-load.txt" 2>&1
  # llmwatch's own reading of it, with DCGM's health and dmon on
  { cat "$out/capture/node-check.toml"; echo 'dcgmi_dmon = true'; echo 'dcgmi_health = true'; } \
    >"$out/node-check-dcgm.toml"
  "$llmwatch" -c "$out/node-check-dcgm.toml" node-check --node gpu-host >"$out/dcgm-node-check.txt" 2>&1
  wait $load
  timeout 120 dcgmi diag -r 1 -j >"$out/dcgmi-diag-r1.json" 2>&1
  timeout 150 dcgmi diag -r 2 -j >"$out/dcgmi-diag-r2.json" 2>&1
fi
echo "== done"
