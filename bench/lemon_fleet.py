#!/usr/bin/env python3
"""The lemon rule on a simulated fleet (#30): does it quarantine the nodes that fail often,
and how many healthy nodes does it drain on wrong attributions?

Model of llmwatch's rule (src/rules/node_findings.cpp): a node with `lemon_failures` incidents
in the ledger within `lemon_window` is drained. 1,000 nodes, 1% of them lemons failing 10x as
often as the rest; each failure is charged to the true node 70% of the time and to a random
other node 30% of the time (attribution errors, --misattributed); a drained node stays out.
One year, run 20 times.

With --check-sees P, each failure is also followed by a node-check of the task's nodes (as
llmwatch runs one after a crash no line attributes, and on a restart's new allocation): the
failed node and --checked-nodes - 1 others. A lemon that just failed fails its check with
probability P (its fault shows on the GPU); every other node checked, a lemon between its faults
too, fails with --check-false Q; a failed check drains at once. What P
and Q would be on a real fleet is not known here: --check-frontier shows what they must be.

Usage: bench/lemon_fleet.py [--failures-per-day 8] [--window-days 7] [--threshold 3]
                            [--misattributed 0.3]
       bench/lemon_fleet.py --frontier     every threshold x window: what each costs
       bench/lemon_fleet.py --frontier --misattributed 0
                                           the same with every culprit named right: what the
                                           fleet's own rates allow any counting rule
       bench/lemon_fleet.py --check-frontier
                                           the default rule (3 in 7 d) with node-checks that see
                                           a lemon's fault after P of its failures and fail a
                                           healthy node in Q of its checks
"""
import argparse, random


def simulate(args, seed):
    rng = random.Random(seed)
    nodes = 1000
    lemons = set(rng.sample(range(nodes), 10))
    healthy_rate = args.failures_per_day / (nodes - len(lemons) + 10 * len(lemons))
    rate = [healthy_rate * (10 if n in lemons else 1) for n in range(nodes)]
    drained, ledger, true_failures = {}, {n: [] for n in range(nodes)}, {n: 0 for n in range(nodes)}
    lemon_failures_at_drain = {}
    total = sum(rate)
    t = 0.0
    while True:
        t += rng.expovariate(total)
        if t > 365:
            break
        # which node fails (drained nodes run nothing, so fail nothing)
        r, acc, node = rng.random() * total, 0.0, 0
        for node in range(nodes):
            acc += rate[node]
            if acc >= r:
                break
        if node in drained:
            continue
        true_failures[node] += 1
        blamed = node
        if rng.random() < args.misattributed:  # attribution error: another node
            blamed = rng.choice([n for n in range(nodes) if n != node and n not in drained])
        ledger[blamed].append(t)
        recent = [x for x in ledger[blamed] if x > t - args.window_days]
        failed = []
        if len(recent) >= args.threshold:
            failed.append(blamed)
        if args.check_sees > 0 or args.check_false > 0:
            # The failed node and checked_nodes - 1 others: drawn from the other nodes' numbers
            # (0 .. nodes - 2), each at or past the failed one moved up by one. Drawn from all
            # nodes and the failed one dropped, a check sometimes covered one node fewer.
            others = rng.sample(range(nodes - 1), args.checked_nodes - 1)
            checked = [node] + [n + (n >= node) for n in others]
            for n in checked:
                # A lemon passes its checks between its faults: only the one that just failed
                # shows it; any other node fails its check as a healthy one would.
                if n not in drained and rng.random() < (
                        args.check_sees if n == node and n in lemons else args.check_false):
                    failed.append(n)
        for n in failed:
            if n not in drained:
                drained[n] = t
                if n in lemons:
                    lemon_failures_at_drain[n] = true_failures[n]
    lemons_quick = sum(1 for n in lemons if n in drained and lemon_failures_at_drain[n] <= 3)
    lemons_ever = sum(1 for n in lemons if n in drained)
    healthy_drained = sum(1 for n in drained if n not in lemons)
    return lemons_quick, lemons_ever, healthy_drained, len(lemons), nodes - len(lemons)


def shares(a):
    """Over a.runs simulated years: the % of lemons drained within <= 3 of their failures, the
    % drained in the year, and the % of healthy nodes drained."""
    quick = ever = healthy = nl = nh = 0
    for seed in range(a.runs):
        q, e, h, l, hn = simulate(a, seed)
        quick, ever, healthy, nl, nh = quick + q, ever + e, healthy + h, nl + l, nh + hn
    return 100 * quick / nl, 100 * ever / nl, 100 * healthy / nh


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--failures-per-day", type=float, default=8)
    p.add_argument("--window-days", type=float, default=7)
    p.add_argument("--threshold", type=int, default=3)
    p.add_argument("--misattributed", type=float, default=0.3)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--frontier", action="store_true")
    p.add_argument("--check-sees", type=float, default=0)
    p.add_argument("--check-false", type=float, default=0)
    p.add_argument("--checked-nodes", type=int, default=8)
    p.add_argument("--check-frontier", action="store_true")
    a = p.parse_args()
    if a.check_frontier:
        print(f"| a lemon's check fails after | a healthy node's check fails | lemons within <= 3 "
              f"failures | healthy drained | ({a.threshold} incidents in {a.window_days:g} d, "
              f"{a.checked_nodes} nodes checked a failure) |")
        print("|---|---|---|---|---|")
        for sees in (0.3, 0.5, 0.6):
            for false in (0.00001, 0.00005, 0.0002):
                a.check_sees, a.check_false = sees, false
                quick, _, healthy = shares(a)
                print(f"| {100 * sees:g}% of its failures | {100 * false:g}% of its checks | "
                      f"{quick:.0f}% | {healthy:.2f}% | |")
        return
    if a.frontier:
        # Counting rules only see attributed incidents; this is what each one trades (#30).
        print("| incidents | window | lemons within <= 3 failures | lemons in the year | healthy drained |")
        print("|---|---|---|---|---|")
        for threshold in (2, 3, 4):
            for window in (7, 14, 30, 60, 90):
                a.threshold, a.window_days = threshold, window
                quick, ever, healthy = shares(a)
                print(f"| {threshold} | {window} d | {quick:.0f}% | {ever:.0f}% | {healthy:.2f}% |")
        return
    quick, ever, healthy = shares(a)
    print(f"| lemon rule: {a.threshold} incidents in {a.window_days:g} d, {a.failures_per_day:g} "
          f"failures/day on 1,000 nodes, {100 * a.misattributed:g}% misattributed, 1 year x {a.runs}"
          " | value | target |")
    print("|---|---|---|")
    print(f"| lemons quarantined within <= 3 of their failures | {quick:.0f}% | >= 90% |")
    print(f"| lemons quarantined within the year | {ever:.0f}% | |")
    print(f"| healthy nodes drained | {healthy:.2f}% | <= 0.5% |")


if __name__ == "__main__":
    main()
