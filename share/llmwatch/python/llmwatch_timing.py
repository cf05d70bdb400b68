"""Per-rank section times for llmwatch's slow-node localisation.

In synchronous training every rank shows the same step time: one slow GPU sets the pace for
all. What tells the slow one apart is the compute before the collective (its peers then wait
for it). This helper times a rank's compute and its collective waits and appends one JSON
line per step to $LLMWATCH_TIMING_DIR/rank-<RANK>.jsonl, which llmwatch reads ([[job]]
timing_dir). Standard library only, one file, no torch import: pass torch.cuda.Event as
`events` so that the compute time is the GPU's, not the kernel launches', without waiting for
the GPU (each section is two events; a step is written at the next step, once its events are
done). `sync=torch.cuda.synchronize` measures the same but drains the GPU twice a step: +2.4 %
on a 49 ms step of an H200, against -0.1 % with events (bench/helper_overhead.py).

    from llmwatch_timing import RankTimer
    timer = RankTimer(events=torch.cuda.Event)
    for step, batch in enumerate(loader):
        with timer.compute():
            loss = model(batch); loss.backward()
        with timer.wait():
            optimizer.step()          # the gradient all-reduce waits here
        timer.step(step)

Without LLMWATCH_TIMING_DIR set the timer does nothing and costs nothing: no event, no sync.

A large job (hundreds of ranks) sets LLMWATCH_TIMING_SUMMARY=1 (or passes summary=True): no
rank writes a file of its own. Every `window`/2 steps the ranks gather each one's window (the
median compute of its last `window` steps and its best earlier such median) and rank 0 writes
every node's name and ranks, and a row for each of the 8 slowest nodes, to
$LLMWATCH_TIMING_DIR/summary.json (its slowest rank, and the median and spread of the other nodes'
ranks: what llmwatch judges a node by), so llmwatch reads one small file per job instead of one
per rank. The gather is torch.distributed.all_gather_object (imported only
then; without an initialised process group a process gathers only itself), or the `gather` you
pass; it is a collective, so every rank must call step() every step.
"""

import json
import os
import socket
import statistics
import time

_ROTATE_BYTES = 1 << 20  # a file this large is renamed to .1: llmwatch reads only the tail
_BEST_OF = 16  # earlier windows a rank's own best is taken from: a run's pace may change
# Nodes rank 0 writes a row for: the slowest, as many as llmwatch shows a job's (its
# kNodesShown). Only a slow node needs its peers' spread (at 16,384 ranks each is a sort), and
# llmwatch reads and judges every job's rewritten summary every cycle: 8 rows, not 64.
_SPREAD_FOR = 8


def _torch_gather(row):
    """Every rank's row, through torch.distributed; a process without a process group (or
    without torch) is a job of one, and gathers only itself rather than fail training."""
    try:
        import torch.distributed as dist  # only in summary mode, once a window is full
    except ImportError:
        return [row]
    if not (dist.is_available() and dist.is_initialized()):
        return [row]
    rows = [None] * dist.get_world_size()
    dist.all_gather_object(rows, row)
    return rows


def _rank_ranges(ranks):
    """[0, 1, 2, 3, 8] -> "0-3 8": a node's ranks as llmwatch reads them."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else "%d-%d" % (ranks[i], ranks[j]))
        i = j + 1
    return " ".join(out)


def _node_rows(rows):
    """Every rank's window (rank, host, now, best, window_s), gathered, as rows for the
    _SPREAD_FOR slowest nodes ("v":3): what llmwatch's rule judges a node by
    (src/rules/straggler.cpp, the same figures it works out from rank files). Every node's name
    and ranks; then, for each of the slowest (a row each, named by index in "rows"), its slowest
    rank (the first such, by rank) and that rank's own best, the median window of the ranks on
    the other nodes, and their spread: 1.4826 x their median absolute deviation from that
    median. The other nodes are at least as fast: llmwatch shows no more of a job, and it reads
    every job's rewritten summary every cycle."""
    rows = sorted(rows, key=lambda r: r[0])
    hosts, members = [], {}
    for i, row in enumerate(rows):
        host = row[1]
        if host not in members:
            members[host] = []
            hosts.append(host)
        members[host].append(i)
    # Each rank's place among the sorted paces (equal paces take distinct places): a node's
    # peers' median is then found by stepping over its own few places, with no copy.
    order = sorted(range(len(rows)), key=lambda i: rows[i][2])
    paces = [rows[i][2] for i in order]
    place = [0] * len(rows)
    for at, i in enumerate(order):
        place[i] = at
    places = {host: sorted(place[i] for i in members[host]) for host in hosts}

    def kth_without(k, skip):
        for at in skip:
            if at <= k:
                k += 1
        return paces[k]

    figures = []
    for host in hosts:
        slowest = rows[max(members[host], key=lambda i: rows[i][2])]  # the first such, by rank
        slowest = (slowest[0], slowest[2], slowest[3])
        peers = len(paces) - len(places[host])
        median = 0.0
        if peers > 0:
            hi = kth_without(peers // 2, places[host])
            median = hi if peers % 2 else (kth_without(peers // 2 - 1, places[host]) + hi) / 2
        relative = min(1.0, median / slowest[1]) if median > 0 and slowest[1] > 0 else 1.0
        figures.append((relative, host, slowest, median))
    slowest_nodes = sorted(sorted(range(len(hosts)), key=lambda i: figures[i][:2])[:_SPREAD_FOR])
    spread = []
    for i in slowest_nodes:
        median, others, start = figures[i][3], [], 0
        for at in places[hosts[i]]:  # the peers: the sorted paces less the node's own places
            others += paces[start:at]
            start = at + 1
        others += paces[start:]
        others = [abs(p - median) for p in others]
        spread.append(round(1.4826 * statistics.median(others), 6) if others else 0.0)
    shown = [figures[i] for i in slowest_nodes]
    return {"hosts": hosts,
            "ranks": [_rank_ranges([rows[i][0] for i in members[h]]) for h in hosts],
            "rows": slowest_nodes,
            "slowest": [int(f[2][0]) for f in shown],
            "now": [round(f[2][1], 6) for f in shown],
            "best": [round(f[2][2], 6) for f in shown],
            "peers": [round(f[3], 6) for f in shown],
            "spread": spread}


class _Section:
    def __init__(self, timer, name):
        self._timer, self._name = timer, name

    def __enter__(self):
        if self._timer._path is None:
            return self  # off: no event, no synchronisation, nothing
        if self._timer._events is not None:
            self._start = self._timer._events(enable_timing=True)
            self._start.record()
        else:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        timer = self._timer
        if timer._path is None:
            return False
        if timer._events is not None:
            end = timer._events(enable_timing=True)
            end.record()
            timer._marks.append((self._name, self._start, end))
            return False
        if timer._sync is not None:
            timer._sync()
        timer._add(self._name, time.perf_counter() - self._t0)
        return False


class RankTimer:
    """Times one rank's sections; step() writes them as one line and starts the next step."""

    def __init__(self, directory=None, rank=None, host=None, sync=None, summary=None, window=20,
                 gather=None, events=None):
        self._dir = directory if directory is not None else os.environ.get("LLMWATCH_TIMING_DIR")
        env_rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))
        self._rank = int(rank if rank is not None else env_rank)
        # The node's name as Slurm knows it: that is what llmwatch drains and excludes.
        self._host = host or os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        self._sync = sync
        # Events mode: a section is two GPU events (torch.cuda.Event), timed on the GPU, and
        # nothing waits for it; a step's times are written at the next step, once its events are
        # done (the GPU then still has this step's work queued). Its marks, and the step held.
        self._events = events
        self._marks, self._held = [], None
        self._sections = {"compute": 0.0, "wait": 0.0}
        self._path = None
        if summary is None:
            summary = os.environ.get("LLMWATCH_TIMING_SUMMARY", "") in ("1", "true", "yes")
        self._summary = bool(summary)
        self._window = max(1, int(window))
        self._gather = gather or _torch_gather
        self._every = max(1, self._window // 2)
        self._recent, self._since, self._earlier = [], 0, []
        if self._dir:
            os.makedirs(self._dir, exist_ok=True)
            name = "summary.json" if self._summary else "rank-%d.jsonl" % self._rank
            self._path = os.path.join(self._dir, name)

    @property
    def enabled(self):
        return self._path is not None

    def compute(self):
        return _Section(self, "compute")

    def wait(self):
        return _Section(self, "wait")

    def add(self, name, seconds):
        """Adds time measured elsewhere (CUDA events, say) to "compute" or "wait"."""
        self._sections[name] += seconds

    _add = add

    def step(self, step):
        """Writes this step's times and starts the next step. Never raises into training, except
        that in summary mode a failed gather (a broken process group) is not hidden."""
        sections, self._sections = self._sections, {"compute": 0.0, "wait": 0.0}
        if not self._path:
            return
        if self._events is not None:
            # Every rank writes step N-1 at step N: in summary mode the gather stays in step.
            held, self._held = self._held, (int(step), sections, self._marks)
            self._marks = []
            if held is None:
                return
            step, sections, marks = held
            for name, start, end in marks:
                end.synchronize()  # done already, unless the GPU is a whole step behind
                sections[name] += start.elapsed_time(end) / 1000.0  # ms
        self._last_step = int(step)
        if self._summary:
            self._summarise(sections["compute"])
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

    def _summarise(self, compute):
        """Summary mode: every half window, one gather, and rank 0 writes its slowest nodes' rows.

        The gather is a collective: it is not guarded, because a rank that skipped it would leave
        every other rank waiting in it. A process group that cannot gather fails training anyway.
        """
        self._recent = (self._recent + [(time.time(), compute)])[-self._window:]
        self._since += 1
        # Every half window, over the last whole window: a slowdown fills the judged window's
        # median within about half a window of steps, whatever step it began at.
        if len(self._recent) < self._window or self._since < self._every:
            return
        self._since = 0
        now = statistics.median(c for _, c in self._recent)
        best = min([now] + self._earlier)
        window_s = time.time() - self._recent[0][0]
        self._earlier = (self._earlier + [now])[-_BEST_OF:]
        rows = self._gather((self._rank, self._host, now, best, window_s))
        if self._rank != 0:
            return
        summary = {"v": 3, "ts": round(time.time(), 3), "step": self._last_step,
                   "window": self._window, "window_s": round(max(r[4] for r in rows), 3)}
        summary.update(_node_rows(rows))
        tmp = "%s.tmp-%d" % (self._path, os.getpid())
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps(summary, separators=(",", ":")) + "\n")
            os.replace(tmp, self._path)  # whole or not at all: llmwatch never reads half of one
        except OSError:
            pass  # a full disk or a gone mount must not stop training
