#!/usr/bin/env bash
# A stand-in for a training job, for llmwatch's demo and integration tests.
# It prints NeMo 2 style step lines, saves a "checkpoint" (a file holding the step) every
# FAKE_CKPT_EVERY steps, resumes from it on start, and honours llmwatch's switches:
#   $FAKE_TRAINER_DIR/kill-switch   present: save and exit (and exit at once on start)
#   $FAKE_TRAINER_DIR/save-switch   present: save a checkpoint now, then remove the file
#   FAKE_SAVE_SECONDS              how long a checkpoint save takes (default 0)
#   $FAKE_TRAINER_DIR/hang          holds an array task id, or "job ID" (a job's own id): that
#                                   task stops stepping but keeps printing heartbeat lines, like
#                                   a rank stuck in a collective. A job's id is what a job that
#                                   is no array is hung by: its resubmitted run has a new id and
#                                   trains on (every such job's task id is "none")
#   $FAKE_TRAINER_DIR/crash         how to die at the next step, printed the way real runs die:
#                                   "nccl HOST" (HOST's rank prints an NCCL WARN, then a
#                                   DistBackendError traceback), "nccl-peer ADDR" (this host's
#                                   rank reports a failed completion from the peer at ADDR),
#                                   "nccl-abort HOST" (HOST's NCCL WARN, then PyTorch's NCCL
#                                   watchdog taking the process down, as its default async
#                                   error handling prints it), "nccl-exit HOST" (the
#                                   "nccl" lines, then srun's word that the rank's task
#                                   exited, as srun prints it while the other tasks run on),
#                                   "nccl-torchrun HOST" (the "nccl" lines, then torchrun's
#                                   elastic agent saying the worker failed, as PyTorch 2.4
#                                   prints it),
#                                   "rank N" (rank N hits a CUDA error; its lines are prefixed
#                                   [rankN]:), "cuda" (a CUDA error naming no node), "oom",
#                                   "traceback" (a plain Python error), or
#                                   "handled" (a traceback the trainer survives, as a wandb
#                                   or HTTP retry: it trains on). Removed first, so a
#                                   restarted run trains on.
#   $FAKE_TRAINER_DIR/crash-at      "STEP KIND [HOST]": the crash above, planned at step STEP
#   $FAKE_TRAINER_DIR/hang-at       "STEP": at step STEP stop stepping and print nothing more
#                                   (both removed when they fire: a restarted run goes past)
#   $FAKE_TRAINER_DIR/bad-step      "STEP": at step STEP die of a plain Python error, every
#                                   run (kept: a bad sample every restart meets again);
#                                   "STEP alternate": every second such death is the host's
#                                   OOM killer's: SIGKILL, and only slurmstepd's line says it
#   $FAKE_TRAINER_DIR/stall         "SECONDS": the next step takes that much longer, once (a
#                                   healthy hiccup: a slow shard read); removed after it
#   FAKE_TRUTH                      a file to append what really happened to, one
#                                   "UNIX-TIME EVENT STEP" line each (start, step, save_begin,
#                                   save_end, hang, exit): the goodput ledger's ground truth
#   FAKE_LOAD_SECONDS               how long loading the checkpoint takes (default 0)
#   FAKE_TEARDOWN_SECONDS           how long it takes to exit after the last step (default 0)
# On SIGTERM (a person's scancel) it prints torchrun's SignalException traceback, as real
# runs do, before it exits. A host is the node's Slurm name (SLURMD_NODENAME), as a real
# cluster's hostnames are.
set -u
dir=${FAKE_TRAINER_DIR:-$PWD}
step_time=${FAKE_STEP_TIME:-1}
max_steps=${FAKE_MAX_STEPS:-100000}
ckpt_every=${FAKE_CKPT_EVERY:-5}
task=${SLURM_ARRAY_TASK_ID:-none}
job_id=${SLURM_JOB_ID:-}
me=${SLURMD_NODENAME:-$(hostname)}
trap 'echo "Traceback (most recent call last):"; echo "torch.distributed.elastic.multiprocessing.api.SignalException: Process $$ got signal: 15"; exit 143' TERM

truth() {
  [ -z "${FAKE_TRUTH:-}" ] || echo "$(date +%s.%N) $1 ${step:-0}" >>"$FAKE_TRUTH"
}

save() {
  local began
  began=$(date +%s.%N)
  echo "[NeMo I $(date '+%Y-%m-%d %H:%M:%S') nemo_logging:393] Saving checkpoint at step $step"
  truth save_begin
  sleep "${FAKE_SAVE_SECONDS:-0}"
  echo "$step" >"$dir/checkpoint.tmp" && mv "$dir/checkpoint.tmp" "$dir/checkpoint"
  local took
  took=$(awk -v a="$began" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
  echo "[NeMo I $(date '+%Y-%m-%d %H:%M:%S') nemo_logging:393] Global Checkpoint Save : Rank: 0 : Iteration: $step : Start time: ${began%.*}.000s : Save duration: ${took}s"
  truth save_end
}

# NCCL's warning on HOST ($1) of a failed completion from the peer at ADDR ($2).
nccl_warn() {
  echo "$1:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer $2 with error 12, opcode 0, len 0, vendor err 129"
}

finish() {
  sleep "${FAKE_TEARDOWN_SECONDS:-0}"
  truth exit
  exit "$1"
}

if [ -e "$dir/kill-switch" ]; then
  echo "kill switch $dir/kill-switch present: exiting without training"
  exit 0
fi
step=$(cat "$dir/checkpoint" 2>/dev/null || echo 0)
truth start
sleep "${FAKE_LOAD_SECONDS:-0}"
echo "[NeMo I $(date '+%Y-%m-%d %H:%M:%S') nemo_logging:393] Global Checkpoint Load : Rank : 0 : resumed at step $step (task $task on $me) : Time spent in load_checkpoint: 0.012s"
while [ "$step" -lt "$max_steps" ]; do
  if [ -e "$dir/hang" ] && hang=$(cat "$dir/hang" 2>/dev/null) &&
    { [ "$hang" = "$task" ] || { [ -n "$job_id" ] && [ "$hang" = "job $job_id" ]; }; }; then
    echo "[rank0] heartbeat: still waiting in ALLREDUCE (step $step)"
    sleep "$step_time"
    continue
  fi
  if [ -e "$dir/crash" ]; then
    read -r kind host <"$dir/crash"
    rm -f "$dir/crash"
    if [ "$kind" = handled ]; then
      echo "Traceback (most recent call last):"
      echo "requests.exceptions.ConnectionError: wandb: Network error, retrying in 2s"
      kind=none
    fi
    case $kind in
      none) ;;
      nccl)
        nccl_warn "${host:-$me}" 10.11.0.2
        echo "Traceback (most recent call last):"
        echo "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error"
        ;;
      nccl-exit)
        nccl_warn "${host:-$me}" 10.11.0.2
        echo "[rank5]: Traceback (most recent call last):"
        echo "[rank5]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error"
        echo "srun: error: ${host:-$me}: task 5: Exited with exit code 1"
        ;;
      nccl-torchrun)
        nccl_warn "${host:-$me}" 10.11.0.2
        echo "[rank5]: Traceback (most recent call last):"
        echo "[rank5]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error"
        echo "E$(date '+%m%d %H:%M:%S').512000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 5 (pid: $$) of binary: /usr/bin/python3"
        ;;
      nccl-abort)
        nccl_warn "${host:-$me}" 10.11.0.2
        echo "[rank5]:[E1130 03:10:06.081662161 ProcessGroupNCCL.cpp:684] [Rank 5] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data."
        echo "[rank5]:[E1130 03:10:06.081690629 ProcessGroupNCCL.cpp:698] [Rank 5] To avoid data inconsistency, we are taking the entire process down."
        echo "[rank5]:[E1130 03:10:06.083402482 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 5] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5"
        echo "terminate called after throwing an instance of 'c10::DistBackendError'"
        ;;
      nccl-peer)
        nccl_warn "$me" "$host"
        echo "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error"
        ;;
      rank)
        echo "[rank$host]: RuntimeError: CUDA error: an illegal memory access was encountered"
        echo "[rank$host]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
        ;;
      cuda) echo "RuntimeError: CUDA error: an illegal memory access was encountered" ;;
      oom) echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" ;;
      *)
        echo "Traceback (most recent call last):"
        echo "KeyError: 'input_ids'"
        ;;
    esac
    [ "$kind" = none ] || finish 1
  fi
  if [ -e "$dir/kill-switch" ]; then
    save
    echo "kill switch seen: exiting cleanly at step $step"
    exit 0
  fi
  sleep "$step_time"
  if [ -e "$dir/stall" ]; then
    sleep "$(cat "$dir/stall")"
    rm -f "$dir/stall"
  fi
  step=$((step + 1))
  loss=$(awk -v s="$step" 'BEGIN { printf "%.3f", 2.0 + 10.0 / (1 + s / 10.0) }')
  echo "Training epoch 0, iteration $step/$((max_steps - 1)) | lr: 3.000e-04 | global_batch_size: 128 | global_step: $step | reduced_train_loss: $loss | train_step_timing in s: $step_time | consumed_samples: $((step * 128))"
  truth step
  if [ -e "$dir/crash-at" ] && read -r at kind host <"$dir/crash-at" && [ "$at" = "$step" ]; then
    rm -f "$dir/crash-at"
    echo "$kind $host" >"$dir/crash"
  fi
  if [ -e "$dir/bad-step" ] && read -r at how <"$dir/bad-step" && [ "$at" = "$step" ]; then
    if [ "${how:-}" = alternate ]; then
      echo x >>"$dir/bad-step-deaths"
      if [ $(($(wc -l <"$dir/bad-step-deaths") % 2)) -eq 0 ]; then
        truth exit
        echo "slurmstepd: error: Detected 1 oom_kill event in StepId=${SLURM_JOB_ID:-0}.batch." \
          "Some of the step tasks have been OOM Killed." >&2
        kill -9 $$
      fi
    fi
    echo "Traceback (most recent call last):"
    echo "ValueError: sample 81234 of shard 17 has 0 tokens"
    finish 1
  fi
  if [ -e "$dir/hang-at" ] && [ "$(cat "$dir/hang-at")" = "$step" ]; then
    rm -f "$dir/hang-at"
    truth hang
    while :; do sleep 1; done
  fi
  if [ -e "$dir/save-switch" ] || [ $((step % ckpt_every)) -eq 0 ]; then
    save
    rm -f "$dir/save-switch"
  fi
done
echo "reached max_steps=$max_steps"
finish 0
