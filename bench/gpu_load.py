#!/usr/bin/env python3
"""A real PyTorch load on a real GPU, timed with llmwatch's per-rank helper (#28).

Each rank steps: its "data loader" (pure-Python CPU work, as decoding and collating are), then
--matmuls bf16 matrix products on the GPU, both inside the helper's compute section (synchronised,
so it is the GPU's time), then a gloo all-reduce of one number (the collective every rank waits
in). Ranks may share one GPU and name themselves as different nodes (SLURMD_NODENAME), so that
one machine runs a "multi-node" job whose nodes can be slowed for real: a rank pinned to a CPU
that other processes also want computes longer, as a node with CPU contention does.

Per-rank files go to --timing-dir (the helper's own format); with --summary-dir the same
sections also go through the helper's summary mode (rank 0 writes rows for its slowest nodes).

Usage (one rank):  gpu_load.py --seconds 40 [--matmuls 20 --size 8192] [--steps-file F]
       (a job):    gpu_load.py --seconds 60 --world 4 --rank R --node node-R --init FILE
                               --timing-dir D [--summary-dir S] [--cpu C]
Changes no GPU setting.
"""
import argparse
import os
from contextlib import nullcontext
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "share",
                                "llmwatch", "python"))
import torch  # noqa: E402
from llmwatch_timing import RankTimer  # noqa: E402


def loader_work(units):
    """CPU work a data loader does per batch: a fixed amount, so that it takes longer only when
    the process gets less CPU."""
    acc = 0
    for i in range(units):
        acc = (acc * 31 + i) % 1000003
    return acc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--matmuls", type=int, default=20)
    p.add_argument("--loader-units", type=int, default=0)
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--node", default=None)
    p.add_argument("--init", default=None, help="a file for torch.distributed's file:// rendezvous")
    p.add_argument("--timing-dir", default=None)
    p.add_argument("--summary-dir", default=None)
    p.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU")
    p.add_argument("--steps-file", default=None, help="append 'time step seconds' per step")
    p.add_argument("--events", action="store_true",
                   help="the helper's events mode (torch.cuda.Event), not sync")
    a = p.parse_args()

    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
        torch.set_num_threads(1)
    dist = None
    if a.world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method="file://" + a.init, rank=a.rank,
                                world_size=a.world)
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    one = torch.ones(1)
    sync = torch.cuda.synchronize
    timing = {"events": torch.cuda.Event} if a.events else {"sync": sync}
    files = RankTimer(directory=a.timing_dir, rank=a.rank, host=a.node, summary=False,
                      **timing) if a.timing_dir else None
    # In events mode the summary times the same sections with its own events; else it is given
    # the synced times the files measured.
    summary = RankTimer(directory=a.summary_dir, rank=a.rank, host=a.node, summary=True,
                        **({"events": torch.cuda.Event} if a.events else {})) \
        if a.summary_dir else None
    own = summary if a.events else None
    steps = open(a.steps_file, "a") if a.steps_file else None
    end = time.time() + a.seconds
    step = 0
    while True:
        if dist is not None:  # every rank takes the same number of steps: rank 0 says when to stop
            flag = torch.tensor([1.0 if time.time() < end else 0.0])
            dist.broadcast(flag, 0)
            if flag.item() == 0.0:
                break
        elif time.time() >= end:
            break
        t0 = time.perf_counter()
        with (files.compute() if files else nullcontext()), \
                (own.compute() if own else nullcontext()):
            loader_work(a.loader_units)
            for _ in range(a.matmuls):
                z = x @ y
            if not a.events:
                sync()
        t1 = time.perf_counter()
        with (files.wait() if files else nullcontext()), (own.wait() if own else nullcontext()):
            if dist is not None:
                dist.all_reduce(one)
        t2 = time.perf_counter()
        if files:
            files.step(step)
        if summary:
            if not a.events:
                summary.add("compute", t1 - t0)
                summary.add("wait", t2 - t1)
            summary.step(step)
        if steps:
            steps.write("%.3f %d %.5f\n" % (time.time(), step, t2 - t0))
            steps.flush()
        step += 1
    del z
    if dist is not None:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
