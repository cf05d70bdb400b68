#!/usr/bin/env python3
"""Measures llmwatch's GPU node health path.

  1. Xid -> DRAIN: an Xid 79 line appended to a node's kernel-log source (file) while
     `llmwatch node-check --follow --every 0.5` follows it and `llmwatch daemon` (1 s cycle)
     supervises a real local Slurm cluster; time until slurmctld shows the node DRAIN.
  2. node-check wall time and peak RSS with every source fed from the captures
     (kernel log with the Xid 119 dmesg capture, stand-in nvidia-smi printing the H100
     capture, nvlink -s, dcgmi diag 4.x document, dcgmi health).

Usage: bench/node_health.py [--build build] [--runs 3]   (needs root: starts Slurm daemons)
"""
import argparse, os, resource, statistics, subprocess, tempfile, time

from bench_cluster import ROOT, cluster_run, sh, wait

FIX = f"{ROOT}/tests/fixtures/gpu"
XID79 = ("[171167.620236] NVRM: Xid (PCI:0000:00:09): 79, pid='<unknown>', name=<unknown>, "
         "GPU has fallen off the bus.\n")


def stand_in_env():
    env = dict(os.environ)
    env.update(FAKE_NVSMI_MODE="ok", FAKE_NVSMI_QUERY=f"{FIX}/nvidia-smi-query-h100.csv",
               FAKE_NVSMI_NVLINK=f"{FIX}/nvlink-status-h100.txt", FAKE_NVSMI_APPS="/dev/null",
               FAKE_DCGMI_DIAG=f"{FIX}/dcgmi-diag-r2-4x-shape-fail.json", FAKE_DCGMI_EXIT="205")
    return env


def write_config(d, extra=""):
    cfg = f"{d}/llmwatch.toml"
    with open(cfg, "w") as f:
        f.write(f'[llmwatch]\nstate_dir = "{d}/state"\ninterval = "1s"\n'
                f'[limits]\nmax_drains_per_hour = 100\n'
                f'[gpu]\nenabled = true\nkernel_log = "file"\nkernel_log_path = "{d}/kmsg/{{node}}.log"\n'
                f'nvidia_smi = "{ROOT}/tests/helpers/fake-nvidia-smi"\nresults_dir = "{d}/results"\n'
                f'node_state_dir = "{d}/nodestate"\nmanage_nodes = "node-[1-4]"\n'
                f'max_drained_fraction = "100%"\n{extra}')
    return cfg


def xid_to_drain(args):
    with cluster_run("llmwatch-bench-") as (d, procs):
        os.makedirs(f"{d}/kmsg")
        cfg = write_config(d)
        env = stand_in_env()
        times = []
        nodes = [f"node-{i}" for i in range(1, args.runs + 1)]
        for n in nodes:
            open(f"{d}/kmsg/{n}.log", "w").write("[1.0] Linux version 6.1\n")
            procs.append(subprocess.Popen([f"{args.build}/llmwatch", "-c", cfg, "node-check", "--node", n,
                                           "--follow", "--every", "0.5"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([f"{args.build}/llmwatch", "-c", cfg, "daemon"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for n in nodes:
            wait(f"{n} result", lambda: os.path.exists(f"{d}/results/{n}.json"))
        time.sleep(2)  # a few healthy cycles first
        for n in nodes:
            t0 = time.time()
            open(f"{d}/kmsg/{n}.log", "a").write(XID79)
            wait(f"{n} DRAIN", lambda: "DRAIN" in sh("scontrol", "show", "node", n).stdout, step=0.02)
            times.append(time.time() - t0)
        return times


def node_check_cost(args, n=20):
    with tempfile.TemporaryDirectory(prefix="llmwatch-bench-") as d:
        os.makedirs(f"{d}/kmsg")
        with open(f"{FIX}/dmesg-with-xid-119.log") as src, open(f"{d}/kmsg/node-1.log", "w") as dst:
            dst.write(src.read())
        cfg = write_config(d, f'dcgmi = "{ROOT}/tests/helpers/fake-dcgmi"\n'
                              'dcgmi_diag_level = "1"\ndcgmi_health = true\n')
        env = stand_in_env()
        walls = []
        for _ in range(n):
            t0 = time.time()
            r = subprocess.run([f"{args.build}/llmwatch", "-c", cfg, "node-check", "--node", "node-1", "--json"],
                               env=env, capture_output=True, text=True)
            walls.append(time.time() - t0)
            assert r.returncode == 2, r.stdout + r.stderr  # CRITICAL: Xid 119 and the dcgmi Fail
        rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return walls, rss_kib


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=f"{ROOT}/build")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    walls, rss = node_check_cost(args)
    times = xid_to_drain(args)
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| Xid line -> node DRAIN in slurmctld ({len(times)} runs) | "
          + " / ".join(f"{t:.2f} s" for t in times) + " | <= 5 s |")
    print(f"| node-check wall, all sources from captures ({len(walls)} runs) | median "
          f"{statistics.median(walls)*1000:.0f} ms, max {max(walls)*1000:.0f} ms | well under 1 s |")
    print(f"| peak RSS of any child (node-check or a stand-in) | {rss/1024:.1f} MiB | < 20 MB |")


if __name__ == "__main__":
    main()
