#!/usr/bin/env python3
"""Timing's extra CPU a steady cycle, in milliseconds, paired (#28's <= 10 % target).

On this 2-core VM one run's steady-cycle CPU varies more from run to run (the host's other load
drifts over minutes) than the few milliseconds timing adds, so two sets of runs taken one after
the other cannot split them. Here the untimed and the timed bench run alternately, a pair at a
time, in an order that alternates too, so a drift falls on both halves of a pair alike; each
pair gives one ratio, and the answer is the median ratio with a bootstrap 95 % interval over
the pairs.

    bench/paired_cpu.py [--pairs N] [--bench build/llmwatch_bench] [--before OTHER_BENCH]
                        [--statistic median|quartile] [-- extra bench args]

With --statistic quartile each run gives its lower quartile steady cycle, not its median: the
host's other load only adds CPU time, so the cycles it disturbed least are the closest to what
the cycle costs, and a run that drifted as a whole moves less.

With --before (the bench built from the code before a change), each set is a triple: the
untimed run, the timed one, and the other binary's timed one, in a rotating order; it says what
the change did to timing's extra, under the same drift.

Each run is `llmwatch_bench --format text --cycles C` with, untimed, `--ranks 0 --job-nodes 64`
(the same 1,000 watched jobs of 64 nodes, no rank summaries) and, timed, `--ranks 512
--rewritten 3` (a 512-rank summary a job, 30 % of them rewritten a cycle: 10 s steps; --rewritten K for K
in 10).
"""
import argparse
import random
import re
import statistics
import subprocess
import sys

# A run's steady cycle CPU: the median cycle's, or the lower quartile's (the cycles the host's
# other load disturbed least; that load only ever adds CPU time, and on a noisy day it moves a
# whole run's median by more than timing's extra).
STATISTICS = {
    "median": re.compile(r"\| steady cycle at the 30 s interval, median of \d+ .*?\| (\d+) ms CPU"),
    "quartile": re.compile(r"\| steady cycle CPU, lower quartile of \d+ .*?\| ([\d.]+) ms"),
}


def steady_cpu_ms(bench, args, statistic="median"):
    out = subprocess.run([bench, "--format", "text"] + args, check=True, capture_output=True,
                         text=True, timeout=1800).stdout
    m = STATISTICS[statistic].search(out)
    if not m:
        sys.exit(f"paired_cpu: no steady cycle {statistic} line in {bench}'s output:\n{out}")
    return float(m.group(1))


SAME_WRITES_HELP = ("untimed: the same summaries written between the cycles, none read "
                    "(--timing-read 0), so that the bench's own work is the same in both halves")


def halves(rewritten, same_writes):
    """The untimed and the timed llmwatch_bench arguments (cycle_profile.py compares the same)."""
    timed = ["--ranks", "512", "--rewritten", str(rewritten)]
    untimed = timed + ["--timing-read", "0"] if same_writes else ["--ranks", "0", "--job-nodes", "64"]
    return untimed, timed


def bootstrap_ci(values, rounds=10000, seed=1):
    rng = random.Random(seed)
    medians = sorted(
        statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def extra(runs, of, over):
    """The median of the ratios run by run, with its bootstrap 95 % interval."""
    ratios = [a / b for a, b in zip(runs[of], runs[over])]
    low, high = bootstrap_ci(ratios)
    return statistics.median(ratios), low, high


def percent(ratio):
    return f"{100 * (ratio - 1):+.1f} %"


# The orders a set of runs takes in turn: a drift within a set never falls on one of them alone.
ORDERS = {2: ["UT", "TU"], 3: ["UTB", "BTU", "TUB", "BUT", "UBT", "TBU"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10, help="sets of runs (triples with --before)")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--rewritten", type=int, default=3,
                    help="of every 10 summaries, rewritten a cycle (0: none changes)")
    ap.add_argument("--same-writes", action="store_true", help=SAME_WRITES_HELP)
    ap.add_argument("--bench", default="build/llmwatch_bench")
    ap.add_argument("--before", help="a second llmwatch_bench (the code before a change): its "
                    "timed half runs in each set too, and is compared with --bench's")
    ap.add_argument("--statistic", choices=sorted(STATISTICS), default="median",
                    help="a run's figure: its median steady cycle, or its lower quartile")
    ap.add_argument("extra", nargs="*", help="more llmwatch_bench arguments, for both")
    a = ap.parse_args()
    common = ["--cycles", str(a.cycles)] + a.extra
    untimed, timed = halves(a.rewritten, a.same_writes)
    plan = {"U": (a.bench, common + untimed), "T": (a.bench, common + timed)}
    if a.before:
        plan["B"] = (a.before, common + timed)
    runs = {k: [] for k in plan}
    orders = ORDERS[len(plan)]
    sets = "triples" if a.before else "pairs"
    for i in range(a.pairs):
        got = {k: steady_cpu_ms(*plan[k], a.statistic) for k in orders[i % len(orders)]}
        for k, ms in got.items():
            runs[k].append(ms)
        line = f"untimed {got['U']:.0f} ms, timed {got['T']:.0f} ms, {percent(got['T'] / got['U'])}"
        if a.before:
            line += f"; before {got['B']:.0f} ms, {percent(got['B'] / got['U'])}"
        print(f"{sets[:-1]} {i + 1}: {line}", flush=True)
    u, t = runs["U"], runs["T"]
    med, low, high = extra(runs, "T", "U")
    print(f"| steady cycle CPU ({a.statistic} of each run), {a.pairs} alternated {sets} | "
          f"untimed median "
          f"{statistics.median(u):.0f} ms ({min(u):.0f}-{max(u):.0f}), timed "
          f"{statistics.median(t):.0f} ms ({min(t):.0f}-{max(t):.0f}) | |")
    print(f"| timing's extra, median of the {sets}' ratios (bootstrap 95 % interval) | "
          f"{percent(med)} ({percent(low)} to {percent(high)}) | "
          f"<= 10 %: {'met' if high <= 1.10 else 'not shown' if low <= 1.10 else 'not met'} |")
    if a.before:
        med, low, high = extra(runs, "B", "U")
        print(f"| the same with --before | {percent(med)} ({percent(low)} to {percent(high)}) | |")
        med, low, high = extra(runs, "T", "B")
        print(f"| timed, against --before's timed | {percent(med)} ({percent(low)} to "
              f"{percent(high)}) | |")


if __name__ == "__main__":
    main()
