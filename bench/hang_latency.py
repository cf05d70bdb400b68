#!/usr/bin/env python3
"""Measures llmwatch's hang handling on a real local Slurm cluster (daemon mode).

  - detection latency: last progress line in the log -> the hung finding recorded
  - restart latency:   the hung finding -> the next array task RUNNING
  - bytes read from logs per cycle vs bytes appended (never re-reading a file)

Usage: bench/hang_latency.py [--build build] [--interval 5s] [--stale-floor 10s|default]
                             [--step-time 0.5] [--runs 3]
                             [--stall 30 --stall-ago 160 --stale-memory 2m]
With --stall, one step takes that many seconds longer (a healthy hiccup), and the run hangs
--stall-ago seconds after it: how long that hiccup keeps widening the allowance (stale_memory).
At the shipped defaults with 10 s steps (#30):
  bench/hang_latency.py --interval 30s --stale-floor default --step-time 10
Needs root (it starts Slurm daemons). Prints a table.
"""
import argparse, json, os, re, sqlite3, subprocess, time

from bench_cluster import ROOT, cluster_run, job_setup, sh, start_daemon, wait



def one_run(args, n):
    with cluster_run("llmwatch-bench-") as (d, procs):
        floor = "" if args.stale_floor == "default" else f'stale_floor = "{args.stale_floor}"\n'
        if args.stale_memory:
            floor += f'stale_memory = "{args.stale_memory}"\n'
        work, cfg = job_setup(d, args.interval, "bench-train", 'startup_grace = "2m"\n' + floor)
        out = sh("sbatch", "--parsable", "--job-name=bench-train", "--array=1-3%1", f"--chdir={work}",
                 f"--output={work}/train-%A_%a.out", f"--export=ALL,FAKE_TRAINER_DIR={work},FAKE_STEP_TIME={args.step_time}",
                 f"{ROOT}/examples/fake-trainer.sh")
        array = out.stdout.strip().split(";")[0]
        procs.append(start_daemon(args.build, cfg, f"{d}/daemon.log"))
        log = f"{work}/train-{array}_1.out"
        steps = re.compile(r"global_step: (\d+)")
        wait("step 10", lambda: os.path.exists(log) and len(steps.findall(open(log).read())) >= 10)
        if args.stall:
            with open(f"{work}/stall", "w") as f:
                f.write(args.stall)
            wait("the stall", lambda: not os.path.exists(f"{work}/stall"), timeout=300)
            time.sleep(args.stall_ago)  # a bench: the run trains on this long after its hiccup
        with open(f"{work}/hang", "w") as f:
            f.write("1")
        # Watch the log: the last progress line is the last time the step count grew.
        last_count, last_progress = -1, time.time()
        db = f"{d}/state/state.db"

        def hung_ts():
            nonlocal last_count, last_progress
            count = len(steps.findall(open(log).read()))
            if count != last_count:
                last_count, last_progress = count, time.time()
            if not os.path.exists(db):  # the daemon's first cycle has not made it yet
                return None
            con = sqlite3.connect(db, timeout=10)
            row = con.execute("SELECT first_seen FROM findings WHERE key='job:bench-train/hung'").fetchone()
            con.close()
            return row[0] if row else None

        found = wait("the hung finding", hung_ts, timeout=600)

        def running2():
            q = json.loads(sh("squeue", "--json").stdout or "{}")
            for j in q.get("jobs", []):
                if j.get("array_task_id") == 2 and j.get("job_state") == "RUNNING":
                    return time.time()
            return None

        running = wait("task 2 RUNNING", running2, step=0.05)
        con = sqlite3.connect(db, timeout=10)
        prog = json.loads(con.execute("SELECT value FROM kv WHERE key='progress:bench-train'").fetchone()[0])
        cycles = con.execute("SELECT COUNT(*) FROM cycles").fetchone()[0]
        con.close()
        appended = sum(os.path.getsize(os.path.join(work, f)) for f in os.listdir(work) if f.endswith(".out"))
        if os.environ.get("LLMWATCH_BENCH_KEEP_LOG"):
            keep = os.environ["LLMWATCH_BENCH_KEEP_LOG"]
            subprocess.run(["cp", f"{d}/daemon.log", keep])
            subprocess.run(["cp", db, keep + ".db"])
            subprocess.run(["cp", log, keep + ".train"])
        wakes = open(f"{d}/daemon.log").read().count("wake: ")
        return {"detect": found - last_progress, "wakes": wakes, "restart": running - found,
                "read": prog.get("bytes_read", 0), "appended": appended, "cycles": cycles}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--interval", default="5s")
    p.add_argument("--stale-floor", default="10s")
    p.add_argument("--step-time", default="0.5")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--stall", default="", help="seconds one step takes longer, before the hang")
    p.add_argument("--stall-ago", type=float, default=160, help="seconds from the stall to the hang")
    p.add_argument("--stale-memory", default="", help="the job's stale_memory (default: shipped)")
    args = p.parse_args()
    rows = [one_run(args, i) for i in range(args.runs)]
    print(f"daemon interval {args.interval}, stale_floor {args.stale_floor}, steps of {args.step_time} s"
          + (f", a {args.stall} s stall {args.stall_ago:g} s before the hang, stale_memory "
             f"{args.stale_memory or 'default'}" if args.stall else ""))
    print(f"{'run':>3} {'detect s':>9} {'restart s':>10} {'log bytes read':>15} {'appended':>9} {'cycles':>7} {'wakes':>6}")
    for i, r in enumerate(rows, 1):
        print(f"{i:>3} {r['detect']:>9.1f} {r['restart']:>10.1f} {r['read']:>15} {r['appended']:>9} {r['cycles']:>7} {r['wakes']:>6}")


if __name__ == "__main__":
    main()
