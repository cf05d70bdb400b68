#!/usr/bin/env python3
"""`llmwatch goodput --since 30d` over 1,000 runs x 30 days of ledger (#29): wall time and
peak RSS of the command, as an operator would run it. Targets: <= 1 s, <= 100 MiB.

Usage: bench/goodput_bench.py [--build build]
"""
import argparse, os, random, resource, sqlite3, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKETS = ["productive", "rework", "checkpoint", "startup", "hang", "slow", "idle end", "queue"]
CAUSES = ["", "hang", "GPU error", "NCCL or network error", "out of memory", "time limit"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=f"{ROOT}/build")
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="llmwatch-goodput-bench-")
    cfg = f"{d}/llmwatch.toml"
    with open(cfg, "w") as f:
        f.write(f'[llmwatch]\nstate_dir = "{d}/state"\n')
    llmwatch = f"{a.build}/llmwatch"
    subprocess.run([llmwatch, "--config", cfg, "events"], capture_output=True, check=True)
    rng = random.Random(29)
    today = int(time.time() // 86400)
    rows = []
    for job in range(1000):
        for day in range(today - 29, today + 1):
            for bucket in BUCKETS:
                cause = "" if bucket in ("productive", "checkpoint", "startup") else rng.choice(CAUSES[1:])
                node = f"node-{rng.randrange(1000)}" if bucket in ("rework", "idle end") else ""
                rows.append((day, f"run-{job}", bucket, cause, node, rng.random() * 86400 * 8))
    con = sqlite3.connect(f"{d}/state/state.db")
    con.executemany("INSERT OR REPLACE INTO goodput VALUES (?,?,?,?,?,?)", rows)
    con.commit()
    con.close()
    print(f"| goodput ledger: 1,000 runs x 30 days ({len(rows):,} rows) | value | target |")
    print("|---|---|---|")
    for args in (["goodput", "--since", "30d"], ["goodput", "--since", "30d", "--by", "node", "--json"],
                 ["goodput", "--since", "30d", "--html", f"{d}/report.html"]):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.time()
        r = subprocess.run([llmwatch, "--config", cfg] + args, capture_output=True, text=True)
        wall = time.time() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        assert r.returncode == 0, r.stderr
        print(f"| `llmwatch {' '.join(args[:4])}...` | {wall:.2f} s, peak RSS {max(rss, before) / 1024:.0f} MiB "
              f"| <= 1 s, <= 100 MiB |")
    subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
