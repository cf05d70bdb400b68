"""What the benches that run on a real local Slurm cluster share: commands, waiting on a
condition with a deadline, and a cluster of their own started in a temp dir and always stopped."""
import os, subprocess, sys, time

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
