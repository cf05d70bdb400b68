#!/usr/bin/env python3
"""Chaos soak: llmwatch's daemon against a hostile world on a real local Slurm cluster.

Three healthy training jobs and one job array whose running task hangs run for --minutes
(default 10) while, at random times (seeded), one of these happens:

  ctld-kill     slurmctld is SIGKILLed, and started again 10-30 s later
  squeue-hang   squeue (llmwatch's, through PATH) hangs for 20-60 s
  disk-full     the state directory's file system is filled for 30 s
  read-only     the state directory's ext4 fails and goes read-only (as errors=remount-ro
                does) for 30 s; then the operator stops llmwatch, runs e2fsck, mounts it
                again and starts llmwatch (a file system with open writers cannot simply be
                remounted read-only and back)
  llmwatch-kill llmwatch is SIGKILLed and started again at once
  metrics-junk  50 idle connections and 20 garbage requests hit /metrics for 30 s

Then the chaos stops and llmwatch gets up to 2 minutes to deliver what it owes. Reported:
actions on healthy jobs (must be 0), restarts of the hung job (at least 1), alerts lost
(must be 0) and duplicated (at most 1 per llmwatch kill), daemons that exited by themselves
(must be 0), and the longest gap between cycles. A benchmark, not a test: it needs root (Slurm
daemons, a loop-mounted ext4) and takes minutes.

Usage: bench/chaos_soak.py [--build build] [--minutes 10] [--seed 1]
"""
import argparse, json, os, random, signal, socket, sqlite3, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(*argv, timeout=60, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def sql(db, query):
    """Reads the state store; None while it cannot be read (full or read-only disk)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(query).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.d = tempfile.mkdtemp(prefix="llmwatch-soak-")
        self.cluster = f"{self.d}/cluster"
        self.state = f"{self.d}/state"
        self.bin = f"{self.d}/bin"
        self.hook = f"{self.d}/hook"
        self.db = f"{self.state}/state.db"
        self.events = []  # (t, what)
        self.kills = 0
        self.daemon = None
        self.recorder = None
        self.hang_tasks = set()
        self.own_exits = []  # exit codes of daemons that ended without the soak stopping them

    def note(self, what):
        self.events.append((time.time(), what))
        print(f"[{time.strftime('%H:%M:%S')}] {what}", flush=True)

    # --- the world -----------------------------------------------------------------------
    def start(self):
        for sub in ("work", "state", "bin", "hook"):
            os.makedirs(f"{self.d}/{sub}", exist_ok=True)
        self.image = f"{self.d}/state.img"
        sh("truncate", "-s", "64M", self.image).check_returncode()
        sh("mkfs.ext4", "-q", self.image).check_returncode()
        self.mount_state()
        out = sh(f"{ROOT}/slurm/local-cluster.sh", "start", self.cluster, "4")
        if out.returncode != 0:
            sys.exit(f"soak: the local cluster did not start: {out.stderr.strip()}")
        os.environ["SLURM_CONF"] = f"{self.cluster}/slurm.conf"
        # squeue as llmwatch sees it: the real one, unless the hang flag is set.
        real = sh("sh", "-c", "command -v squeue").stdout.strip()
        with open(f"{self.bin}/squeue", "w") as f:
            f.write(f'#!/bin/sh\n[ -e "{self.d}/hang-squeue" ] && exec sleep 3600\nexec {real} "$@"\n')
        os.chmod(f"{self.bin}/squeue", 0o755)
        self.recorder = subprocess.Popen([sys.executable, f"{ROOT}/tests/helpers/http_recorder.py", self.hook],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait("the webhook recorder", lambda: os.path.exists(f"{self.hook}/port"))
        port = open(f"{self.hook}/port").read().strip()
        self.metrics_port = free_port()
        jobs = "".join(f'[[job]]\nname = "soak-ok-{i}"\nuser = "root"\n' for i in (1, 2, 3))
        with open(f"{self.d}/llmwatch.toml", "w") as f:
            f.write(f'[llmwatch]\nstate_dir = "{self.state}"\ninterval = "5s"\nlease_ttl = "90s"\n'
                    f'cycle_deadline = "30s"\n[slurm]\ntimeout = "5s"\n{jobs}'
                    f'[[job]]\nname = "soak-hang"\nuser = "root"\nstale_floor = "20s"\n'
                    f'[[alert.webhook]]\nurl = "http://127.0.0.1:{port}/hook"\nmin_severity = "info"\n'
                    f'timeout = "5s"\n')
        for i in (1, 2, 3):
            self.sbatch(f"soak-ok-{i}", f"ok-{i}")
        self.sbatch("soak-hang", "hang", "--array=1-50%1")
        self.start_daemon()

    def mount_state(self):
        sh("mount", "-o", "loop,errors=remount-ro", self.image, self.state).check_returncode()
        self.loop = os.path.basename(sh("findmnt", "-n", "-o", "SOURCE", self.state).stdout.strip())

    def sbatch(self, name, work, *extra):
        w = f"{self.d}/work/{work}"
        os.makedirs(w, exist_ok=True)
        out = sh("sbatch", "--parsable", f"--job-name={name}", f"--chdir={w}", f"--output={w}/train-%j.out",
                 f"--export=ALL,FAKE_TRAINER_DIR={w},FAKE_STEP_TIME=1", *extra, f"{ROOT}/examples/fake-trainer.sh")
        out.check_returncode()
        return out.stdout.strip().split(";")[0]

    def start_daemon(self):
        env = dict(os.environ, PATH=f"{self.bin}:{os.environ['PATH']}")
        self.daemon = subprocess.Popen(
            [f"{self.args.build}/llmwatch", "--config", f"{self.d}/llmwatch.toml", "daemon",
             "--listen", f"127.0.0.1:{self.metrics_port}"],
            env=env, stdout=open(f"{self.d}/llmwatch.log", "a"), stderr=subprocess.STDOUT)

    def wait(self, what, pred, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if pred():
                return
            time.sleep(0.2)
        sys.exit(f"soak: timed out waiting for {what}")

    def running(self, name):
        """{job id: array task id} of name's RUNNING tasks, or None when squeue cannot answer."""
        out = sh("squeue", "-h", "-t", "RUNNING", "-n", name, "-o", "%i %A %K", timeout=20)
        if out.returncode != 0:
            return None
        rows = [line.split() for line in out.stdout.splitlines() if line.strip()]
        return {r[1]: r[2] for r in rows if len(r) == 3}

    def hang_the_running_task(self):
        # The array's running task trains for a while, then hangs; each task hangs once.
        tasks = self.running("soak-hang")
        if not tasks:
            return
        for job_id, task in tasks.items():
            self.hang_tasks.add(task)
            log = f"{self.d}/work/hang/train-{job_id}.out"
            if os.path.exists(log) and os.path.getsize(log) > 2000:
                with open(f"{self.d}/work/hang/hang", "w") as f:
                    f.write(task)

    # --- chaos ---------------------------------------------------------------------------
    def ctld_kill(self):
        pid = int(open(f"{self.cluster}/run/slurmctld.pid").read())
        os.kill(pid, signal.SIGKILL)
        down = self.rng.uniform(10, 30)
        self.note(f"ctld-kill: slurmctld {pid} SIGKILLed, down for {down:.0f} s")
        self.idle(down)
        env = dict(os.environ, LLMWATCH_CLUSTER_DIR=self.cluster)
        sh("slurmctld", "-f", os.environ["SLURM_CONF"], env=env).check_returncode()
        self.note("ctld-kill: slurmctld started again")

    def squeue_hang(self):
        secs = self.rng.uniform(20, 60)
        open(f"{self.d}/hang-squeue", "w").close()
        self.note(f"squeue-hang: for {secs:.0f} s")
        self.idle(secs)
        os.unlink(f"{self.d}/hang-squeue")

    def disk_full(self):
        # Whole: 1 MiB writes leave up to 1 MiB free, and every small write llmwatch makes (its
        # lease's renewal, a page of the store) still succeeded: the "full" disk was never full.
        sh("dd", "if=/dev/zero", f"of={self.state}/filler", "bs=1M", "count=100")
        sh("dd", "if=/dev/zero", f"of={self.state}/filler-4k", "bs=4k", "count=100000")
        for i in range(64):  # the last few blocks, one small file each
            try:
                with open(f"{self.state}/filler-{i}", "w") as f:
                    f.write("x")
            except OSError:
                break
        self.note("disk-full: state file system filled for 30 s")
        self.idle(30)
        for name in os.listdir(self.state):
            if name.startswith("filler"):
                os.unlink(f"{self.state}/{name}")

    def read_only(self):
        with open(f"/sys/fs/ext4/{self.loop}/trigger_fs_error", "w") as f:
            f.write("1")
        self.note("read-only: the state file system failed (emergency read-only) for 30 s")
        self.idle(30)
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=120)
        sh("umount", self.state).check_returncode()
        sh("e2fsck", "-fy", self.image)
        self.mount_state()
        self.note("read-only: llmwatch stopped, e2fsck run, file system mounted again, llmwatch started")
        self.start_daemon()

    def llmwatch_kill(self):
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait()
        self.kills += 1
        self.note(f"llmwatch-kill: daemon {self.daemon.pid} SIGKILLed; started again")
        self.start_daemon()

    def metrics_junk(self):
        socks = []
        for _ in range(50):
            try:
                socks.append(socket.create_connection(("127.0.0.1", self.metrics_port), timeout=2))
            except OSError:
                pass
        for _ in range(20):
            try:
                with socket.create_connection(("127.0.0.1", self.metrics_port), timeout=2) as s:
                    s.sendall(bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(1, 20000))))
            except OSError:
                pass
        self.note(f"metrics-junk: {len(socks)} idle connections for 30 s, 20 garbage requests")
        self.idle(30)
        for s in socks:
            s.close()

    def idle(self, secs):
        end = time.time() + secs
        while time.time() < end:
            self.hang_the_running_task()
            self.notice_own_exit()
            time.sleep(min(1.0, max(0.0, end - time.time())))

    def notice_own_exit(self):
        """A daemon that ended without the soak stopping it supervises nothing until the next
        chaos event starts one again: said at once, and counted (a daemon started in a killed
        one's place once exited at once, 'Address already in use', unseen)."""
        if self.daemon is None or self.daemon.poll() is None or getattr(self.daemon, "told", False):
            return
        self.daemon.told = True
        self.own_exits.append(self.daemon.returncode)
        last = open(f"{self.d}/llmwatch.log", errors="replace").read().strip().splitlines()[-1:]
        self.note(f"llmwatch exited by itself (code {self.daemon.returncode}): {' '.join(last)}")

    # --- the run -------------------------------------------------------------------------
    def run(self):
        chaos = [self.ctld_kill, self.squeue_hang, self.disk_full, self.read_only, self.llmwatch_kill,
                 self.metrics_junk]
        self.note("soak: started")
        end = time.time() + self.args.minutes * 60
        while time.time() < end:
            self.idle(min(self.rng.uniform(15, 45), max(0, end - time.time())))
            if time.time() < end:
                self.rng.choice(chaos)()
        self.note("soak: chaos over; waiting for deliveries")
        deadline = time.time() + 120
        while time.time() < deadline:
            rows = sql(self.db, "SELECT COUNT(*) FROM deliveries WHERE state != 'sent'")
            if rows and rows[0][0] == 0:
                break
            time.sleep(1)
        self.daemon.send_signal(signal.SIGTERM)
        self.daemon.wait(timeout=60)
        self.daemon = None
        return self.report()

    def report(self):
        db = self.db
        healthy_actions = sql(db, "SELECT kind, subject, reason FROM actions "
                                  "WHERE subject LIKE 'soak-ok-%' AND kind != 'alert'") or []
        hang_actions = sql(db, "SELECT kind, COUNT(*) FROM actions WHERE subject = 'soak-hang' "
                               "AND state = 'done' GROUP BY kind") or []
        still_running = sum(1 for i in (1, 2, 3) if self.running(f"soak-ok-{i}"))
        deliveries = sql(db, "SELECT alert_key, state, created FROM deliveries") or []
        received = []
        if os.path.exists(f"{self.hook}/requests.jsonl"):
            received = [json.loads(line) for line in open(f"{self.hook}/requests.jsonl")]
        counts = {}
        for r in received:
            counts[r["body"]] = counts.get(r["body"], 0) + 1
        # One cycle's alerts to a channel go out grouped in one message: a journaled alert
        # arrived if a message received after it was journaled names its key.
        lost = sum(1 for key, state, created in deliveries
                   if state != "sent" or not any(r["t"] >= created - 1 and json.dumps(key)[1:-1] in r["body"]
                                                 for r in received))
        duplicated = sum(n - 1 for n in counts.values())
        cycles = sql(db, "SELECT started, finished FROM cycles ORDER BY started") or []
        gaps = [(b[0] - a[1], a[1]) for a, b in zip(cycles, cycles[1:])]
        longest, at = max(gaps) if gaps else (0, 0)
        during = [w for t, w in self.events if at - 5 <= t <= at + longest]
        result = {
            "minutes": self.args.minutes, "seed": self.args.seed,
            "chaos events": sum(1 for _, w in self.events if not w.startswith("soak")),
            "actions on healthy jobs": len(healthy_actions),
            "healthy jobs still running": f"{still_running}/3",
            "hung tasks": len(self.hang_tasks),
            "hang actions done": dict(hang_actions),
            "alerts journaled": len(deliveries),
            "messages received": len(received),
            "alerts lost": lost,
            "alerts duplicated": duplicated,
            "llmwatch kills": self.kills,
            "llmwatch exits by itself": len(self.own_exits),
            "cycles": len(cycles),
            "longest gap between cycles s": round(longest, 1),
            "events around the longest gap": during,
        }
        if healthy_actions:
            result["healthy actions"] = healthy_actions
        return result

    def stop(self):
        if self.daemon:
            self.daemon.kill()
            self.daemon.wait()
        if self.recorder:
            self.recorder.kill()
            self.recorder.wait()
        sh(f"{ROOT}/slurm/local-cluster.sh", "stop", self.cluster, timeout=120)
        sh("umount", self.state)
        if not self.args.keep:
            sh("rm", "-rf", self.d)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=f"{ROOT}/build")
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep the temp dir (state, logs)")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: needs root (Slurm daemons, a loop-mounted ext4)")
    soak = Soak(args)
    try:
        soak.start()
        result = soak.run()
    finally:
        soak.stop()
    print(json.dumps(result, indent=2))
    ok = (result["actions on healthy jobs"] == 0 and result["alerts lost"] == 0
          and result["alerts duplicated"] <= result["llmwatch kills"])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
