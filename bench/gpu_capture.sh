#!/usr/bin/env bash
# Captures what llmwatch reads from a real GPU (#28): idle, under a real PyTorch load, and under
# two real slowdowns: a second process competing for the same GPU, and a 4-"node" job (ranks
# sharing the GPU, named node-1..4) whose node-3 has its data loader starved of CPU. The
# job's ranks time themselves with share/llmwatch/python/llmwatch_timing.py. Reads only:
# changes no GPU setting.
#
# Usage: [PHASES="alone contended job"] [EVENTS=1] bench/gpu_capture.sh OUTDIR [LLMWATCH]
#   (a machine with an NVIDIA GPU, nvidia-smi and torch; with LLMWATCH, a built llmwatch, its
#   node-check also reads the real nvidia-smi at each capture; idle is always captured)
set -u
out=$1 llmwatch=${2:-}
phases=" ${PHASES:-alone contended job} "
events=()
[ -n "${EVENTS:-}" ] && events=(--events)  # the job's ranks time with CUDA events, not syncs
here=$(cd "$(dirname "$0")" && pwd)
load=(python3 "$here/gpu_load.py")
mkdir -p "$out"
# Exactly the fields llmwatch asks for first (src/probes/gpu/node_sources.cpp).
fields=$(python3 - "$here/../src/probes/gpu/node_sources.cpp" <<'EOF'
import re, sys
src = open(sys.argv[1]).read()
fields = ""
for name in ("kNvidiaSmiFields =", "kNvidiaSmiCounterFields ="):
    body = src.split(name, 1)[1].split(";", 1)[0]
    fields += "".join(re.findall(r'"([^"]*)"', body))
print(fields)
EOF
)

cat >"$out/node-check.toml" <<EOF
[llmwatch]
state_dir = "$out/state"
[gpu]
enabled = true
kernel_log = "none"
nvidia_smi = "nvidia-smi"
results_dir = "$out/results"
node_state_dir = "$out/nodestate"
EOF

snap() { # snap NAME: one answer of each form llmwatch reads, and llmwatch's own reading of it
  nvidia-smi --query-gpu="$fields" --format=csv,nounits >"$out/$1-query.csv" 2>&1
  nvidia-smi -q >"$out/$1-q.txt" 2>&1
  nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv,noheader >"$out/$1-compute-apps.csv" 2>&1
  nvidia-smi dmon -c 3 -s pucv >"$out/$1-dmon.txt" 2>&1
  if [ -n "$llmwatch" ]; then
    local t0=$(date +%s.%N)
    "$llmwatch" -c "$out/node-check.toml" node-check --node gpu-host >"$out/$1-node-check.txt" 2>&1
    echo "exit $? after $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s" >>"$out/$1-node-check.txt"
  fi
}
hog() { # hog CPU: a process that wants CPU CPU all the time
  python3 -c "import os; os.sched_setaffinity(0, {$1})
while True: pass" &
}

{
  date -u; nvidia-smi --version; nvidia-smi -L; uname -r; echo "cpus $(nproc)"
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  command -v dcgmi || echo "no dcgmi"
  echo "fields $fields"
} >"$out/info.txt" 2>&1
snap idle
nvidia-smi -q -x >"$out/idle-q.xml" 2>&1
nvidia-smi nvlink -s >"$out/idle-nvlink.txt" 2>&1

if [[ $phases == *" alone "* ]]; then
echo "== one trainer alone"
"${load[@]}" --seconds 40 --steps-file "$out/alone-steps.txt" &
trainer=$!
sleep 25 && snap load
wait $trainer
fi

if [[ $phases == *" contended "* ]]; then
echo "== a second process competing for the GPU from second 15"
"${load[@]}" --seconds 55 --steps-file "$out/contended-steps.txt" &
trainer=$!
sleep 15
echo "$(date +%s.%N) competitor starts" >>"$out/contended-steps.txt"
"${load[@]}" --seconds 40 &
competitor=$!
sleep 20 && snap contended
wait $trainer $competitor
fi

if [[ $phases == *" job "* ]]; then
echo "== a 4-node job; node-3's data loader starved of CPU from second 30"
rm -f "$out/rendezvous"
ranks=()
for r in 0 1 2 3; do
  "${load[@]}" --seconds 65 --world 4 --rank $r --node node-$((r + 1)) --init "$out/rendezvous" \
    --timing-dir "$out/timing" --summary-dir "$out/summary" --cpu $((r + 1)) --size 4096 \
    --matmuls 100 --loader-units 400000 --steps-file "$out/job-steps-$r.txt" "${events[@]}" &
  ranks+=($!)
done
sleep 30
echo "$(date +%s.%N) hogs start on cpu 3 (node-3)" >"$out/job-events.txt"
hogs=()
for _ in 1 2 3; do hog 3; hogs+=($!); done
sleep 20 && snap starved
wait "${ranks[@]}"
kill "${hogs[@]}"
echo "$(date +%s.%N) done" >>"$out/job-events.txt"
rm -f "$out/rendezvous"
fi
echo "== captured"
ls -la "$out"
