#!/usr/bin/env python3
"""What the look after a crash line costs on a node of many ranks (#30), on a real local Slurm
cluster: a job of --ranks-per-node Python ranks on each of --nodes nodes (a launcher a node
starts them with RANK and WORLD_SIZE, as torchrun's agent does), each waiting in a Python function with a second thread, as a rank waits in a
collective; then the daemon's own look into them, timed: `srun --overlap --label llmwatch stacks
--ranks --every-rank --with-stacks` (one gdb a rank, all of a node's at once: `thread 1`, `bt`,
`py-bt`; each rank paused while its gdb reads it).

Reported a row per ranks-per-node: the look's wall time (srun's start, every node's gdbs and the
answer), the stacks it brought back (every rank's, or the look failed), the machine's CPU
time over the look (/proc/stat: the nodes' gdbs run under slurmstepd, not as this bench's
children), and how long each rank was stopped (a thread of each rank times its own 10 ms
sleeps: the median rank's longest pause and the longest of all).
Every node of the local cluster runs on this one machine, so N nodes' gdbs share its cores: the
wall time is that of N x ranks-per-node gdbs on this machine's cores, an upper bound for a node
that runs its own. Plain python3.11 (no PyTorch here): a rank with PyTorch's libraries loaded
gives gdb far more symbols to read.

Usage: bench/look_cost.py [--build build] [--nodes 2] [--ranks-per-node 1 2 4 8] [--runs 3]
Needs root (it starts Slurm daemons). Prints a table.
"""
import argparse, os, time

from bench_cluster import ROOT, cluster_run, sh, wait

# A launcher a node, as torchrun's agent: it starts the node's ranks with RANK and WORLD_SIZE
# (the local cluster's nodes have one CPU each, so Slurm starts one task a node).
LAUNCHER = r'''
import os, subprocess, sys
per_node, nodes = int(sys.argv[2]), int(os.environ["SLURM_NNODES"])
node = int(os.environ["SLURM_PROCID"])
ranks = [subprocess.Popen([sys.executable, "-u", sys.argv[1]],
                          env=dict(os.environ, RANK=str(node * per_node + i), LOCAL_RANK=str(i),
                                   WORLD_SIZE=str(nodes * per_node)))
         for i in range(per_node)]
for r in ranks:
    r.wait()
'''

RANK = r'''
import os, threading, time
d = os.path.dirname(os.path.abspath(__file__))

def wait_in_allreduce(seconds):
    time.sleep(seconds)

# A second thread, as a rank's NCCL watchdog and data loader threads are. It also times the
# rank's pauses: a 10 ms sleep that took more than 0.1 s was the process stopped (a gdb
# attached), appended to gaps-RANK as "wall-clock-at-its-end seconds".
def watch_pauses():
    path = os.path.join(d, "gaps-" + os.environ["RANK"])
    while True:
        t = time.monotonic()
        time.sleep(0.01)
        gap = time.monotonic() - t
        if gap > 0.1:
            with open(path, "a") as f:
                f.write(f"{time.time()} {gap}\n")

threading.Thread(target=watch_pauses, daemon=True).start()
open(os.path.join(d, "up-" + os.environ["RANK"]), "w").write(str(os.getpid()))
wait_in_allreduce(3600)
'''


def cpu_jiffies():
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    # user nice system (idle and iowait left out) irq softirq steal
    return sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7))


def one_look(args, per_node):
    with cluster_run("llmwatch-look-bench-") as (d, procs):
        work = f"{d}/work"
        os.makedirs(work)
        with open(f"{work}/rank.py", "w") as f:
            f.write(RANK)
        with open(f"{work}/launcher.py", "w") as f:
            f.write(LAUNCHER)
        world = args.nodes * per_node
        out = sh("sbatch", "--parsable", "--job-name=look-bench", f"--nodes={args.nodes}",
                 "--ntasks-per-node=1", f"--chdir={work}", f"--output={work}/out-%j.txt",
                 "--wrap", f"srun /usr/bin/python3 -u {work}/launcher.py {work}/rank.py {per_node}")
        if out.returncode != 0:
            raise SystemExit("bench: sbatch: " + out.stderr.strip())
        job = out.stdout.strip().split(";")[0]
        wait("every rank up", lambda: sum(n.startswith("up-") for n in os.listdir(work)) == world,
             timeout=120)
        rows = []
        for _ in range(args.runs):
            argv = ["srun", f"--jobid={job}", "--overlap", f"--nodes={args.nodes}",
                    f"--ntasks={args.nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=0",
                    "--quiet", "--label", f"{args.build}/llmwatch", "stacks", "--job", job,
                    "--ranks", "--every-rank", "--with-stacks"]
            before, t0 = cpu_jiffies(), time.time()
            r = sh(*argv)
            wall = time.time() - t0
            cpu = (cpu_jiffies() - before) / os.sysconf("SC_CLK_TCK")
            stacks = r.stdout.count("=== llmwatch-stack ")
            # Each rank's longest pause that ended within the look (its thread's next write may
            # come a moment after srun returned).
            time.sleep(0.5)
            pauses = []
            for rank in range(world):
                path = f"{work}/gaps-{rank}"
                gaps = [0.0]
                if os.path.exists(path):
                    for line in open(path):
                        end, gap = map(float, line.split())
                        if t0 <= end <= t0 + wall + 0.5:
                            gaps.append(gap)
                pauses.append(max(gaps))
            rows.append((wall, cpu, stacks, sorted(pauses)))
        sh("scancel", job)
        return world, rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--ranks-per-node", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    print(f"{os.cpu_count()} cores; {args.nodes} nodes of the local cluster on this machine")
    print("| ranks a node | ranks | look wall time | machine CPU over the look | stacks back "
          "| a rank paused (median, longest) |")
    print("|---|---|---|---|---|---|")
    for per_node in args.ranks_per_node:
        world, rows = one_look(args, per_node)
        print(f"| {per_node} | {world} | " + ", ".join(f"{w:.2f} s" for w, _, _, _ in rows) + " | "
              + ", ".join(f"{c:.2f} s" for _, c, _, _ in rows) + " | "
              + ", ".join(str(s) for _, _, s, _ in rows) + " | "
              + ", ".join(f"{p[len(p) // 2]:.2f} s, {p[-1]:.2f} s" for _, _, _, p in rows)
              + " |", flush=True)


if __name__ == "__main__":
    main()
