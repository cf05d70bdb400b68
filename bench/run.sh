#!/usr/bin/env bash
# make bench: every benchmark that needs no cluster, as tables (bench/hang_latency.py,
# bench/launch_failure_latency.py, bench/node_health.py and bench/chaos_soak.py start a local
# Slurm cluster and need root; run them by hand).
set -euo pipefail
bench=$1 llmwatch=$2
here=$(dirname "$0")
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -r)"
"$bench" --format text
echo
"$bench" --format json --log-mib 256
echo
/usr/bin/python3 "$here/status_latency.py" "$llmwatch"
echo
/usr/bin/python3 "$here/goodput_bench.py" --build "$(dirname "$llmwatch")"
