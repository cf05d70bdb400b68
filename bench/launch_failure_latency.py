#!/usr/bin/env python3
"""A failed launch -> the run RUNNING elsewhere, at the shipped defaults, on a real local Slurm
cluster (#30: lose less per interruption).

Each node's prolog fails the first launch that finds a marker file: Slurm drains that node
("Prolog error") and holds the run ("launch failed requeued held"). Measured from the drain
(sinfo's reason_changed_at): llmwatch's release (squeue no longer says "launch failed"), and
the run RUNNING (squeue polled every 50 ms). Slurm lets a requeued run start only once its
credential lifetime has passed (cred_expire, 120 s by default; --cred-expire sets it).

--no-llmwatch: no daemon runs, as before llmwatch knew this case: the run stays held; the
bench reports how long it was seen held, up to --cap seconds.

Usage: bench/launch_failure_latency.py [--build build] [--interval 30s] [--runs 1]
                                       [--cred-expire default] [--no-llmwatch] [--cap 300]
Needs root (it starts Slurm daemons). Prints a table.
"""
import argparse, json, os, subprocess, tempfile, time

from bench_cluster import ROOT, cluster_run, job_setup, sh, start_daemon, wait


def drained_at():
    nodes = json.loads(sh("sinfo", "--json").stdout)["nodes"]
    return max((n.get("reason_changed_at", 0) for n in nodes if n.get("reason") == "Prolog error"),
               default=0)


def one_run(args, prolog_dir):
    marker = f"{prolog_dir}/fail-next-launch"
    open(marker, "w").close()
    with cluster_run("llmwatch-launch-bench-", nodes=3) as (d, procs):
        work, cfg = job_setup(d, args.interval, "bench-train")
        if not args.no_llmwatch:
            procs.append(start_daemon(args.build, cfg, f"{d}/daemon.log"))
        out = sh("sbatch", "--parsable", "--job-name=bench-train", "--nodes=1", f"--chdir={work}",
                 f"--output={work}/train-%j.out",
                 f"--export=ALL,FAKE_TRAINER_DIR={work},FAKE_STEP_TIME=0.5",
                 f"{ROOT}/examples/fake-trainer.sh")
        job = out.stdout.strip().split(";")[0]

        def line():
            return sh("squeue", "-h", "-j", job, "-o", "%T|%r").stdout.strip()

        wait("the failed launch", lambda: "launch failed" in line(), timeout=60)
        failed = wait("the drain's time", drained_at, timeout=30)
        if args.no_llmwatch:
            deadline = time.time() + args.cap
            while time.time() < deadline and "launch failed" in line():
                time.sleep(0.5)
            held = time.time() - failed
            return {"released": None, "running": None, "held": held}
        released = wait("the release", lambda: "launch failed" not in line() and time.time(),
                        timeout=args.cap)
        running = wait("the run RUNNING", lambda: line().startswith("RUNNING") and time.time(),
                       timeout=args.cap)
        return {"released": released - failed, "running": running - failed, "held": None}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--interval", default="30s")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--cred-expire", default="default")
    p.add_argument("--no-llmwatch", action="store_true")
    p.add_argument("--cap", type=float, default=300)
    args = p.parse_args()
    prolog_dir = tempfile.mkdtemp(prefix="llmwatch-launch-prolog-")
    os.chmod(prolog_dir, 0o755)
    prolog = f"{prolog_dir}/prolog.sh"
    with open(prolog, "w") as f:
        f.write(f'#!/bin/sh\nrm "{prolog_dir}/fail-next-launch" 2>/dev/null && exit 1\nexit 0\n')
    os.chmod(prolog, 0o755)
    os.environ["LLMWATCH_CLUSTER_PROLOG"] = prolog
    if args.cred_expire != "default":
        os.environ["LLMWATCH_CLUSTER_CRED_EXPIRE"] = args.cred_expire
    try:
        rows = [one_run(args, prolog_dir) for _ in range(args.runs)]
    finally:
        subprocess.run(["rm", "-rf", prolog_dir])
    print(f"interval {args.interval}, cred_expire {args.cred_expire}, "
          f"{'no llmwatch' if args.no_llmwatch else 'llmwatch daemon'}")
    print("run | failure -> released | failure -> RUNNING | held (no release)")
    for i, r in enumerate(rows, 1):
        fmt = lambda v: "-" if v is None else f"{v:.1f} s"
        held = "-" if r["held"] is None else f"still held after {r['held']:.0f} s"
        print(f"{i} | {fmt(r['released'])} | {fmt(r['running'])} | {held}")


if __name__ == "__main__":
    main()
