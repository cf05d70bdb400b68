"""What the benches that run on a real local Slurm cluster share: commands, waiting on a
condition with a deadline, and a cluster of their own started in a temp dir and always stopped."""
import contextlib, getpass, os, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(*argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kw)


def wait(what, pred, timeout=120, step=0.05):
    """pred()'s first true value, polled every `step` s; exits the bench after `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    sys.exit(f"bench: timed out waiting for {what}")


def start_cluster(d, nodes=4):
    """slurm/local-cluster.sh in d/cluster, with SLURM_CONF set for the commands; its path.
    Stop it with stop_cluster, in a `finally`."""
    cluster = f"{d}/cluster"
    sh(f"{ROOT}/slurm/local-cluster.sh", "start", cluster, str(nodes)).check_returncode()
    os.environ["SLURM_CONF"] = f"{cluster}/slurm.conf"
    return cluster


def stop_cluster(cluster):
    sh(f"{ROOT}/slurm/local-cluster.sh", "stop", cluster)


@contextlib.contextmanager
def cluster_run(prefix, nodes=4):
    """A temp dir with a local cluster of its own; yields (dir, procs). The processes put in
    procs are stopped, the cluster too, and the dir removed, however the run ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    procs = []
    cluster = start_cluster(d, nodes)
    try:
        yield d, procs
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        stop_cluster(cluster)
        subprocess.run(["rm", "-rf", d])


def start_daemon(build, cfg, log_path):
    """`llmwatch daemon` with its output in log_path; put it in cluster_run's procs."""
    with open(log_path, "w") as log:
        return subprocess.Popen([f"{build}/llmwatch", "--config", cfg, "daemon"], stdout=log,
                                stderr=subprocess.STDOUT)


def job_setup(d, interval, name, extra=""):
    """d/work for the job's files, and an llmwatch config watching the job `name` as this user
    every `interval` (with `extra` [[job]] lines); returns (work, config path)."""
    work = f"{d}/work"
    os.makedirs(work)
    cfg = f"{d}/llmwatch.toml"
    with open(cfg, "w") as f:
        f.write(f'[llmwatch]\nstate_dir = "{d}/state"\ninterval = "{interval}"\n'
                f'[[job]]\nname = "{name}"\nuser = "{getpass.getuser()}"\n{extra}')
    return work, cfg
