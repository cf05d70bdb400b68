#!/usr/bin/env python3
"""Where timing's extra CPU goes in the steady cycle (#28), from perf profiles of the cycles alone.

paired_cpu.py says how much timing adds; this says where. Each configuration of
llmwatch_bench (as paired_cpu.py pairs them, `--same-writes` too) runs
under `perf record --call-graph dwarf`, enabled only around each steady cycle (the bench writes
"enable" and "disable" to LLMWATCH_BENCH_PERF_CTL: its generator between the cycles is most of
the process's CPU). Every sample is then put in one of two heaps: under a frame of the timing
code (reading the summaries, judging them, showing the speeds) or not. What the second heap
grows by is the rest of the cycle slowed by timing being there (a larger heap, malloc's lock
held longer, caches shared), which no frame of the timing code shows.

    sudo bench/cycle_profile.py [--cycles N] [--rewritten K] [--same-writes]
                                [--bench build/llmwatch_bench]

Needs perf (Debian: linux-perf) and the right to use it. One run each: compare a few runs, the
VM drifts (paired_cpu.py for the total).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

from paired_cpu import SAME_WRITES_HELP, halves

TIMING = re.compile(r"read_rank_timing|judge_straggler|shown_speeds|kept_verdict|StragglerVerdict"
                    r"|straggler|RankWindows|NodeWindow|timing")
ALLOC = re.compile(r"malloc|_int_free|cfree|__lll_lock|unlink_chunk|consolidate|operator new"
                   r"|operator delete")
# The cycle's parts, by the first of these a sample's stack holds.
PARTS = [("squeue parse", "parse_squeue_text"), ("sinfo parse", "parse_sinfo_text"),
         ("job files (logs, timing)", "job_files"), ("judge", "JobLogCheck::judge"),
         ("prepare", "JobLogCheck::prepare"), ("record", "record_phase")]
HZ = 2000  # perf's sampling rate: a sample is 1/HZ s of CPU


def profile(bench, args, cycles, work):
    data, fifo = os.path.join(work, "perf.data"), os.path.join(work, "ctl")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    env = dict(os.environ, LLMWATCH_BENCH_PERF_CTL=fifo)
    subprocess.run(["perf", "record", "-q", "-F", str(HZ), "--call-graph", "dwarf,32768", "-D",
                    "-1", "--control", f"fifo:{fifo}", "-o", data, bench, "--format", "text",
                    "--cycles", str(cycles)] + args, env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=1800)
    script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], check=True,
                            capture_output=True, text=True, timeout=1800).stdout
    stacks = []
    for block in script.split("\n\n"):
        frames = [re.sub(r"^\s*[0-9a-f]+\s+", "", l).strip() for l in block.splitlines()
                  if l.strip()]
        if frames:
            stacks.append(frames)
    return stacks


def split(stacks, cycles):
    ms = 1000.0 / HZ / cycles  # one sample, a cycle's share
    heaps, parts = collections.Counter(), collections.Counter()
    for frames in stacks:
        timing = any(TIMING.search(f) for f in frames)
        alloc = any(ALLOC.search(f) for f in frames[:6])
        heaps[("timing" if timing else "rest") + (" in malloc" if alloc else "")] += ms
        if not timing:
            part = next((name for name, pat in PARTS if any(pat in f for f in frames)), "other")
            parts[part] += ms
    return heaps, parts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--rewritten", type=int, default=3)
    ap.add_argument("--same-writes", action="store_true", help=SAME_WRITES_HELP)
    ap.add_argument("--bench", default="build/llmwatch_bench")
    a = ap.parse_args()
    untimed_args, timed_args = halves(a.rewritten, a.same_writes)
    with tempfile.TemporaryDirectory() as work:
        untimed = split(profile(a.bench, untimed_args, a.cycles, work), a.cycles)
        timed = split(profile(a.bench, timed_args, a.cycles, work), a.cycles)
    total_u, total_t = sum(untimed[0].values()), sum(timed[0].values())
    print(f"| ms CPU a steady cycle (perf samples, {a.cycles} cycles each) | untimed | timed | "
          "timed - untimed |\n|---|---|---|---|")
    print(f"| whole cycle | {total_u:.1f} | {total_t:.1f} | {total_t - total_u:+.1f} |")
    for heap in ("timing", "timing in malloc", "rest", "rest in malloc"):
        u, t = untimed[0][heap], timed[0][heap]
        print(f"| {heap} | {u:.1f} | {t:.1f} | {t - u:+.1f} |")
    for name in [p for p, _ in PARTS] + ["other"]:
        u, t = untimed[1][name], timed[1][name]
        print(f"| rest: {name} | {u:.1f} | {t:.1f} | {t - u:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
