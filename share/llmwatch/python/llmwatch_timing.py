"""Per-rank section times for llmwatch's slow-node localisation.

In synchronous training every rank shows the same step time: one slow GPU sets the pace for
all. What tells the slow one apart is the compute before the collective (its peers then wait
for it). This helper times a rank's compute and its collective waits and appends one JSON
line per step to $LLMWATCH_TIMING_DIR/rank-<RANK>.jsonl, which llmwatch reads ([[job]]
timing_dir). Standard library only, one file, no torch import: pass torch.cuda.synchronize
as `sync` so that the compute time is the GPU's, not the kernel launches'.

    from llmwatch_timing import RankTimer
    timer = RankTimer(sync=torch.cuda.synchronize)
    for step, batch in enumerate(loader):
        with timer.compute():
            loss = model(batch); loss.backward()
        with timer.wait():
            optimizer.step()          # the gradient all-reduce waits here
        timer.step(step)

Without LLMWATCH_TIMING_DIR set the timer does nothing and costs nothing.
"""

import json
import os
import socket
import time

_ROTATE_BYTES = 1 << 20  # a file this large is renamed to .1: llmwatch reads only the tail


class _Section:
    def __init__(self, timer, name):
        self._timer, self._name = timer, name

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self._timer._sync is not None:
            self._timer._sync()
        self._timer._add(self._name, time.perf_counter() - self._t0)
        return False


class RankTimer:
    """Times one rank's sections; step() writes them as one line and starts the next step."""

    def __init__(self, directory=None, rank=None, host=None, sync=None):
        self._dir = directory if directory is not None else os.environ.get("LLMWATCH_TIMING_DIR")
        env_rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))
        self._rank = int(rank if rank is not None else env_rank)
        # The node's name as Slurm knows it: that is what llmwatch drains and excludes.
        self._host = host or os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        self._sync = sync
        self._sections = {"compute": 0.0, "wait": 0.0}
        self._path = None
        if self._dir:
            os.makedirs(self._dir, exist_ok=True)
            self._path = os.path.join(self._dir, "rank-%d.jsonl" % self._rank)

    @property
    def enabled(self):
        return self._path is not None

    def compute(self):
        return _Section(self, "compute")

    def wait(self):
        return _Section(self, "wait")

    def _add(self, name, seconds):
        self._sections[name] += seconds

    def step(self, step):
        """Writes this step's times and starts the next step. Never raises into training."""
        sections, self._sections = self._sections, {"compute": 0.0, "wait": 0.0}
        if not self._path:
            return
        line = json.dumps({"v": 1, "ts": round(time.time(), 3), "rank": self._rank,
                           "host": self._host, "step": int(step),
                           "compute_s": round(sections["compute"], 6),
                           "wait_s": round(sections["wait"], 6)})
        try:
            if os.path.exists(self._path) and os.path.getsize(self._path) > _ROTATE_BYTES:
                os.replace(self._path, self._path + ".1")
            with open(self._path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            pass  # a full disk or a gone mount must not stop training
