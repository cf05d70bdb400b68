#!/usr/bin/env python3
"""Crash -> new run RUNNING, at the shipped defaults, on a real local Slurm cluster (#30).

A single (non-array) job of the fake trainer steps every --step-time seconds; after step 5 and a
random part of the interval, it prints an NCCL error naming its node and exits 1. llmwatch (daemon mode) finds the task gone at
its next look, makes the post-mortem and restarts the run off that node. Measured: the crash
line in the log -> a new job of the same name RUNNING (squeue polled every 50 ms).

--teardown S: the task takes S seconds to exit after its crash line (other ranks hanging on, a
slow epilog), as FAKE_TEARDOWN_SECONDS. With S past the hang allowance (--teardown 600: the
peers of the crashed rank wait in a collective until NCCL's timeout), the run is found hung,
cancelled and restarted; add --settle 60 so that the daemon has learned the step interval
before the crash, as it has for a run it has watched for a while.

--nccl-form abort: with --blame log, the NCCL error is not raised to Python (a DistBackendError
traceback, which an elastic trainer may catch) but ends in PyTorch's NCCL watchdog taking the
process down (its default async error handling): no rank steps past that, whatever the step time.
--nccl-form rank-exit: the traceback, then srun's word that the rank's task exited ("srun: error:
HOST: task 5: Exited with exit code 1", printed while the other tasks run on).
--nccl-form torchrun: the traceback, then torchrun's elastic agent saying the worker failed
("failed (exitcode: 1) local_rank: 5 (pid: ...) of binary: ...").

--trainer python: with --blame log, a Python trainer (Debian's python3, whose frames gdb reads
with python3.11-dbg's py-bt) prints the same lines and lingers in a Python function, so the hang
is confirmed by two stack dumps (the second 4 s after the first, after a line no rank goes on
from), not by one as for the shell trainer.

--trainer python-ranks: two ranks (srun, a task a node on two nodes, SLURM_PROCID): rank 0 prints
the steps, rank 1 prints the DistBackendError traceback ("[rank1]: ...") and exits, and rank 0
waits in the collective it left for --teardown seconds. srun's own "task 1: Exited" goes to
/dev/null, as where the run's log is the trainer's and not srun's: only the look at which ranks
still run (llmwatch stacks --ranks, 8 s after the line) can tell that rank 1 is gone.
--rank-end linger: rank 1's process does not end: its exit waits to join a thread that never
ends, so the look finds it there, and only its main thread in Py_FinalizeEx (gdb's backtrace
of that one process) says its program has ended.
--rank-prefix no: rank 1's lines name no rank (most logs): every rank's process is looked into
(llmwatch stacks --ranks --every-rank), and the one gone or exiting is the line's.
--peer computing (the default): rank 0 is still computing its step (a sleep in the module) when
rank 1's error comes, and enters the collective at its step's end, about 5 s after the line.
--peer in-collective: rank 0 spends its whole step in the collective (wait_in_allreduce), as a
peer of a rank whose collective failed is: it is there when the line comes and stays there
(the look's stacks, 4 s after the line, are then the hang's first dump: since stop 80).
--ended N (python-ranks): N ranks end at the crash, ranks 1..N, a node each beside rank 0's (as
after a network error every rank on both ends of the failed link raises); their lines come
with --rank-prefix's form. With several ended and no prefix, which printed the line is not
known: before stop 81 the look then said nothing.

--blame node-check: the error names no node (a CUDA error); [gpu] is on, and the task's node's
kernel log shows an Xid 79 from just before it (stand-in nvidia-smi printing the H100 capture):
what the restart avoids is found by node-check, in the dying task or after its end.
--blame none: the same CUDA error with [gpu] off: nothing says which node to avoid, and no
node-check would say more at the task's end, so the restart is queued behind the task at once
(before 2026-11-28 it waited for the task's end, Slurm asked about that task alone meanwhile).

LLMWATCH_BENCH_KEEP_LOG=PATH keeps the daemon's log there (and the run's, PATH.train); with
--runs N, each run's as PATH.K, K from 0.

Usage: bench/crash_latency.py [--build build] [--interval 30s] [--runs 3] [--teardown 0]
                              [--settle 0] [--blame log|node-check|none]
                              [--nccl-form traceback|abort|rank-exit|torchrun]
                              [--trainer shell|python|python-ranks] [--rank-end exit|linger]
                              [--rank-prefix yes|no] [--peer computing|in-collective]
                              [--ended 1|2|3]
Needs root (it starts Slurm daemons). Prints a table.
"""
import argparse, json, os, random, subprocess, time

from bench_cluster import ROOT, cluster_run, job_setup, sh, start_daemon, wait

# The Python trainer (--trainer python), submitted with --wrap: NeMo step lines every
# FAKE_STEP_TIME s, resumed from
# its checkpoint file; at the step after $FAKE_TRAINER_DIR/crash appears, the lines of
# fake-trainer.sh's NCCL crash kind it names, then it lingers in a collective for
# FAKE_TEARDOWN_SECONDS (its peers would wait there until NCCL's timeout).
PY_TRAINER = r'''
import os, sys, time
# As fake-trainer.sh: a restart resubmits with --export=NONE, so the run's own directory and
# the defaults then (the copy of the --wrap script Slurm kept carries no environment).
d = os.environ.get("FAKE_TRAINER_DIR", os.getcwd())
step_time = float(os.environ.get("FAKE_STEP_TIME", "2"))
teardown = float(os.environ.get("FAKE_TEARDOWN_SECONDS", "0"))
NCCL = ("node-1:48211:48377 [5] NCCL WARN NET/IB : Got completion from peer 10.11.0.2 with "
        "error 12, opcode 0, len 0, vendor err 129")
RAISED = ["[rank5]: Traceback (most recent call last):",
          "[rank5]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
          "remote process exited or there was a network error"]
LINES = {
    "nccl": RAISED,
    "nccl-exit": RAISED + ["srun: error: node-1: task 5: Exited with exit code 1"],
    "nccl-torchrun": RAISED + [
        "E1202 03:10:14.512000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed "
        "(exitcode: 1) local_rank: 5 (pid: %d) of binary: /usr/bin/python3" % os.getpid()],
    "nccl-abort": [
        "[rank5]:[E1130 03:10:06.081690629 ProcessGroupNCCL.cpp:698] [Rank 5] To avoid data "
        "inconsistency, we are taking the entire process down.",
        "terminate called after throwing an instance of 'c10::DistBackendError'"],
}

def wait_in_allreduce(seconds):
    time.sleep(seconds)

def train():
    ckpt = os.path.join(d, "checkpoint")
    step = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
    while True:
        crash = os.path.join(d, "crash")
        if os.path.exists(crash):
            kind = open(crash).read().split()[0]
            os.remove(crash)
            print(NCCL)
            print("\n".join(LINES[kind]), flush=True)
            wait_in_allreduce(teardown)
            sys.exit(1)
        time.sleep(step_time)
        step += 1
        print(f"Training epoch 0, iteration {step}/99999 | global_step: {step} | "
              f"reduced_train_loss: 2.5 | train_step_timing in s: {step_time}", flush=True)
        if step % 5 == 0:
            open(ckpt, "w").write(str(step))

train()
'''


# --trainer python-ranks: a rank a task (SLURM_PROCID); rank 1 raises and exits, rank 0 waits.
PY_RANKS_TRAINER = r'''
import os, sys, threading, time
d = os.environ.get("FAKE_TRAINER_DIR", os.getcwd())
step_time = float(os.environ.get("FAKE_STEP_TIME", "2"))
teardown = float(os.environ.get("FAKE_TEARDOWN_SECONDS", "0"))
rank = int(os.environ["SLURM_PROCID"])
gone = os.path.join(d, "rank1-gone")
mine = os.path.join(d, f"rank{rank}-gone")
ckpt = os.path.join(d, "checkpoint")
step = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
if rank == 0:  # a restart: the ranks that ended run again, and the crash is over
    if os.path.exists(os.path.join(d, "crash")):
        os.remove(os.path.join(d, "crash"))
    for r in range(1, int(os.environ.get("SLURM_NTASKS", "2"))):
        if os.path.exists(os.path.join(d, f"rank{r}-gone")):
            os.remove(os.path.join(d, f"rank{r}-gone"))

def wait_in_allreduce(seconds):
    time.sleep(seconds)

# Every rank past 0 ends at the crash (--ended N: N of them, ranks 1..N; rank 1's end is what
# rank 0 waits on). They look for it half a step out of phase with rank 0's steps, so that the
# error always comes mid-step, after rank 0's last step line and before the step it would print
# next (which it then never prints: the collective waits on them).
if rank > 0:
    time.sleep(step_time / 2)
while True:
    if rank > 0 or os.environ.get("FAKE_PEER") != "in-collective":
        time.sleep(step_time)
    step += 1
    if rank > 0:
        crash = os.path.join(d, "crash")
        if os.path.exists(crash) and not os.path.exists(mine):
            open(mine, "w").write("1")
            prefix = f"[rank{rank}]: " if os.environ.get("FAKE_RANK_PREFIX") != "no" else ""
            print(f"{prefix}Traceback (most recent call last):", flush=True)
            print(f"{prefix}torch.distributed.DistBackendError: NCCL error in: "
                  "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error",
                  flush=True)
            if os.environ.get("FAKE_RANK_END") == "linger":
                # Its exit waits to join a thread that never ends (as a process group's
                # destructor or an atexit handler that hangs would hold it): the process lingers.
                threading.Thread(target=time.sleep, args=(3600,)).start()
            sys.exit(1)
        continue
    if os.environ.get("FAKE_PEER") == "in-collective":
        # The step is the collective; after rank 1 is gone the same call waits out the teardown.
        ended = os.path.exists(gone)
        wait_in_allreduce(teardown if ended else step_time)
        if ended:
            sys.exit(1)
        if os.path.exists(gone):
            continue
    elif os.path.exists(gone):
        wait_in_allreduce(teardown)
        sys.exit(1)
    print(f"Training epoch 0, iteration {step}/99999 | global_step: {step} | "
          f"reduced_train_loss: 2.5 | train_step_timing in s: {step_time}", flush=True)
    if step % 5 == 0:
        open(ckpt, "w").write(str(step))
'''


def one_run(args, run=0):
    with cluster_run("llmwatch-crash-bench-") as (d, procs):
        gpu = ""
        if args.blame == "node-check":
            os.makedirs(f"{d}/kmsg")
            for i in range(1, 5):
                with open(f"{d}/kmsg/node-{i}.log", "w") as f:
                    f.write("[1.0] Linux version 6.1\n")
            os.environ.update(FAKE_NVSMI_MODE="ok", FAKE_NVSMI_APPS="/dev/null",
                              FAKE_NVSMI_QUERY=f"{ROOT}/tests/fixtures/gpu/nvidia-smi-query-h100.csv")
            gpu = (f'[gpu]\nenabled = true\nkernel_log = "file"\n'
                   f'kernel_log_path = "{d}/kmsg/{{node}}.log"\nnvlink = false\n'
                   f'nvidia_smi = "{ROOT}/tests/helpers/fake-nvidia-smi"\n'
                   f'node_state_dir = "{d}/nodestate"\n')
        work, cfg = job_setup(d, args.interval, "bench-crash", gpu)
        trainer = [f"{ROOT}/examples/fake-trainer.sh"]
        nodes = ["--nodes=1"]
        if args.trainer == "python":
            with open(f"{work}/train.py", "w") as f:
                f.write(PY_TRAINER)
            trainer = ["--wrap", f"exec /usr/bin/python3 -u {work}/train.py"]
        if args.trainer == "python-ranks":
            with open(f"{work}/train.py", "w") as f:
                f.write(PY_RANKS_TRAINER)
            trainer = ["--wrap", f"srun --kill-on-bad-exit=0 /usr/bin/python3 -u {work}/train.py "
                       "2>/dev/null"]
            nodes = [f"--nodes={args.ended + 1}", "--ntasks-per-node=1"]
        out = sh("sbatch", "--parsable", "--job-name=bench-crash", *nodes, f"--chdir={work}",
                 f"--output={work}/train-%j.out",
                 f"--export=ALL,FAKE_TRAINER_DIR={work},FAKE_STEP_TIME={args.step_time},"
                 f"FAKE_TEARDOWN_SECONDS={args.teardown},FAKE_RANK_END={args.rank_end},"
                 f"FAKE_RANK_PREFIX={args.rank_prefix},FAKE_PEER={args.peer}",
                 *trainer)
        first = out.stdout.strip().split(";")[0]
        log = f"{work}/train-{first}.out"
        # The daemon starts once the run steps, as it watches a run in production: one started
        # before the log existed followed nothing until its second tick, and a crash before it
        # was seen only there (runs of 15.8 s at --teardown 0, 2026-11-27).
        wait("step 1", lambda: os.path.exists(log) and "global_step: 1 " in open(log).read())
        procs.append(start_daemon(args.build, cfg, f"{d}/daemon.log"))
        wait("step 5", lambda: os.path.exists(log) and "global_step: 5 " in open(log).read())
        time.sleep(args.settle)
        # The crash at a random phase of the daemon's tick, as in production (the daemon starts
        # with the job: without this every run would crash at the same point of the interval).
        time.sleep(random.uniform(0, args.interval_s))
        if args.blame == "none":
            with open(f"{work}/crash", "w") as f:
                f.write("cuda\n")
            line = "CUDA error"
        elif args.blame == "node-check":
            node = sh("squeue", "-h", "-j", first, "-o", "%N").stdout.strip()
            with open(f"{d}/kmsg/{node}.log", "a") as f:
                f.write("[171167.620236] NVRM: Xid (PCI:0000:00:09): 79, pid=<unknown>, "
                        "name=<unknown>, GPU has fallen off the bus.\n")
            with open(f"{work}/crash", "w") as f:
                f.write("cuda\n")
            line = "CUDA error"
        elif args.trainer == "python-ranks":
            with open(f"{work}/crash", "w") as f:
                f.write("nccl\n")
            line = "DistBackendError"
        else:
            with open(f"{work}/crash", "w") as f:
                f.write({"abort": "nccl-abort", "rank-exit": "nccl-exit",
                         "torchrun": "nccl-torchrun"}.get(args.nccl_form, "nccl")
                        + "\n")
            line = "NCCL WARN"
        crashed = wait("the crash line", lambda: line in open(log).read() and time.time())

        def rerun():
            for j in json.loads(sh("squeue", "--json").stdout or "{}").get("jobs", []):
                if (j.get("name") == "bench-crash" and str(j.get("job_id")) != first
                        and j.get("job_state") == "RUNNING"):
                    return time.time()
            return None

        running = wait("the restarted run RUNNING", rerun, timeout=300)
        if os.environ.get("LLMWATCH_BENCH_KEEP_LOG"):  # the daemon's log and the run's, to read
            keep = os.environ["LLMWATCH_BENCH_KEEP_LOG"] + (f".{run}" if args.runs > 1 else "")
            subprocess.run(["cp", f"{d}/daemon.log", keep])
            subprocess.run(["cp", log, keep + ".train"])
        return running - crashed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--interval", default="30s")
    p.add_argument("--step-time", default="2")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--teardown", default="0")
    p.add_argument("--settle", type=float, default=0)
    p.add_argument("--blame", choices=["log", "node-check", "none"], default="log")
    p.add_argument("--nccl-form", choices=["traceback", "abort", "rank-exit", "torchrun"],
                   default="traceback")
    p.add_argument("--trainer", choices=["shell", "python", "python-ranks"], default="shell")
    p.add_argument("--rank-end", choices=["exit", "linger"], default="exit")
    p.add_argument("--rank-prefix", choices=["yes", "no"], default="yes")
    p.add_argument("--peer", choices=["computing", "in-collective"], default="computing")
    p.add_argument("--ended", type=int, choices=[1, 2, 3], default=1)
    args = p.parse_args()
    if args.trainer.startswith("python") and args.blame != "log":
        p.error("--trainer python prints the NCCL forms only: use it with --blame log")
    args.interval_s = float(args.interval.rstrip("s"))
    rows = [one_run(args, run) for run in range(args.runs)]
    print(f"daemon interval {args.interval}, steps of {args.step_time} s, "
          f"teardown {args.teardown} s, settled {args.settle:g} s, blamed by {args.blame}"
          + (f", the NCCL error as {args.nccl_form}" if args.blame == "log" else "")
          + f", a {args.trainer} trainer"
          + ((", rank 1" if args.ended == 1 else f", ranks 1-{args.ended}")
             + f" ending by {args.rank_end}, "
             + ("its" if args.ended == 1 else "their") + " lines "
             + ("prefixed" if args.rank_prefix == "yes" else "unprefixed")
             + f", rank 0 {args.peer} at the line"
             if args.trainer == "python-ranks" else ""))
    print("crash line -> restarted run RUNNING: " + ", ".join(f"{r:.1f} s" for r in rows))


if __name__ == "__main__":
    main()
