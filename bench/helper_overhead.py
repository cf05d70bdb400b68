#!/usr/bin/env python3
"""What llmwatch's per-rank timing helper costs a real training step on a real GPU (#28).

The helper's sections synchronise the GPU (sync=torch.cuda.synchronize) so that a section's
time is the GPU's, not the kernel launches'. A synchronisation stops the CPU from queueing the
next work while the GPU runs: this measures what that costs, on a small transformer trained
with AdamW in bf16, for a step of a few milliseconds and one of tens of milliseconds.

Modes, interleaved, each the mean step of --steps steps after a warm-up, --repeats times:
  plain   no synchronisation in the loop (the fastest a loop can be)
  item    loss.item() every step (what most loops do to log the loss)
  helper  the helper around forward+backward (compute) and the optimizer step (wait), synced
  helper+item  both
  events  the helper in events mode (events=torch.cuda.Event): timed on the GPU, never synced
  events+item  both

Usage: helper_overhead.py [--steps 100] [--repeats 5]   (needs torch and a GPU; changes no
GPU setting). Prints a table.
"""
import argparse
import json
import os
from contextlib import nullcontext
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "share",
                                "llmwatch", "python"))
import torch  # noqa: E402
from llmwatch_timing import RankTimer  # noqa: E402


def build(width, layers, batch, seq):
    layer = torch.nn.TransformerEncoderLayer(width, width // 128, 4 * width, batch_first=True,
                                             dtype=torch.bfloat16, device="cuda")
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    x = torch.randn(batch, seq, width, device="cuda", dtype=torch.bfloat16)
    return model, opt, x


def run(model, opt, x, steps, mode, timer):
    nothing = nullcontext()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for step in range(steps):
        with timer.compute() if timer else nothing:
            loss = model(x).float().pow(2).mean()
            loss.backward()
        with timer.wait() if timer else nothing:
            opt.step()
            opt.zero_grad(set_to_none=True)
        if "item" in mode:
            loss.item()
        if timer:
            timer.step(step)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    modes = ["plain", "item", "helper", "helper+item", "events", "events+item"]
    print("| model | step (plain) | " + " | ".join(m + " vs plain" for m in modes[1:]) + " |")
    print("|---|---|" + "---|" * (len(modes) - 1))
    for name, shape in [("small: width 1024, 2 layers, 4x256 tokens", (1024, 2, 4, 256)),
                        ("large: width 2048, 8 layers, 8x1024 tokens", (2048, 8, 8, 1024))]:
        model, opt, x = build(*shape)
        with tempfile.TemporaryDirectory() as d:
            timers = {"helper": RankTimer(directory=d, rank=0, host="gpu-host",
                                          sync=torch.cuda.synchronize),
                      "events": RankTimer(directory=d, rank=1, host="gpu-host",
                                          events=torch.cuda.Event)}
            times = {m: [] for m in modes}
            run(model, opt, x, 20, "plain", None)  # warm-up: kernels chosen, memory taken
            for _ in range(a.repeats):
                for m in modes:
                    times[m].append(run(model, opt, x, a.steps, m, timers.get(m.split("+")[0])))
            # What the events mode measured, against the synced helper: the same sections.
            measured = {}
            for rank, mode in ((0, "helper"), (1, "events")):
                with open(os.path.join(d, "rank-%d.jsonl" % rank)) as f:
                    rows = [json.loads(line) for line in f]
                measured[mode] = statistics.median(r["compute_s"] for r in rows[-a.steps:])
        plain = statistics.median(times["plain"])
        cells = ["%+.1f%%" % (100 * (statistics.median(times[m]) / plain - 1)) for m in modes[1:]]
        print("| %s | %.2f ms | %s |" % (name, plain * 1e3, " | ".join(cells)), flush=True)
        spread = {m: "%.2f-%.2f" % (min(v) * 1e3, max(v) * 1e3) for m, v in times.items()}
        print("|  (ms, min-max of %d) | %s |" % (a.repeats, " | ".join(spread[m] for m in modes)))
        print("|  (compute section, median ms: synced / events) | %.2f / %.2f |"
              % (measured["helper"] * 1e3, measured["events"] * 1e3) + " |" * (len(modes) - 2))
        del model, opt, x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
