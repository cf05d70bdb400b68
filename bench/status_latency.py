#!/usr/bin/env python3
"""`llmwatch status` process start to exit on a state store holding a month of history:
8,640 cycles (5-minute interval), 259,200 progress rows (one step every 10 s), 20,000 events,
2,000 actions, 300 findings. Prints one table row. Usage: bench/status_latency.py LLMWATCH"""
import getpass, os, shutil, sqlite3, statistics, subprocess, sys, tempfile, time

bin_ = sys.argv[1]
d = tempfile.mkdtemp(prefix="llmwatch-bench-status-")
cfg = f"{d}/llmwatch.toml"
# A job names its owner (as root, llmwatch refuses a job that does not).
open(cfg, "w").write(f'[llmwatch]\nstate_dir = "{d}/state"\n[[job]]\nname = "tr1"\n'
                     f'user = "{getpass.getuser()}"\n')
r = subprocess.run([bin_, "-c", cfg, "status"], capture_output=True, text=True)  # makes the store
assert os.path.exists(f"{d}/state/state.db"), r.stderr
now = time.time()
month = 30 * 86400
db = sqlite3.connect(f"{d}/state/state.db")
db.executemany("INSERT INTO cycles(started, finished, host, pid, findings, actions, unknown_probes)"
               " VALUES(?,?,?,?,?,?,?)", [(now - month + i * 300, now - month + i * 300 + 0.2, "mgmt", 1, 1, 0, 0)
                                          for i in range(8640)])
db.executemany("INSERT INTO progress(job, ts, step, step_time, loss) VALUES(?,?,?,?,?)",
               [("tr1", now - month + i * 10, i, 10.0, 2.0) for i in range(259200)])
db.executemany("INSERT INTO events(ts, kind, subject, severity, message) VALUES(?,?,?,?,?)",
               [(now - month + i * 130, "finding", "tr1", "warning", f"event {i}") for i in range(20000)])
db.executemany("INSERT INTO actions(idem_key, kind, subject, reason, state, detail, started, finished)"
               " VALUES(?,?,?,?,?,?,?,?)", [(f"k{i}", "alert", "tr1", "r", "done", "d", now - month + i * 1300,
                                             now - month + i * 1300) for i in range(2000)])
db.executemany("INSERT INTO findings(key, severity, summary, state, first_seen, last_seen, resolved_at)"
               " VALUES(?,?,?,?,?,?,?)", [(f"job:tr1/x{i}", "warning", "s", "resolved", now - month, now - month, now - month)
                                          for i in range(300)])
db.commit()
db.close()
walls = []
for _ in range(15):
    t0 = time.time()
    r = subprocess.run([bin_, "-c", cfg, "status"], capture_output=True, text=True)
    walls.append(time.time() - t0)
    assert r.returncode in (0, 3), r.stderr
size = os.path.getsize(f"{d}/state/state.db") / 1048576
print(f"| `llmwatch status`, month of history ({size:.0f} MiB store), 15 runs | median "
      f"{statistics.median(walls) * 1000:.0f} ms, max {max(walls) * 1000:.0f} ms | <= 50 ms |")
shutil.rmtree(d)
