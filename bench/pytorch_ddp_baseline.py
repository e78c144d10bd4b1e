#!/usr/bin/python3
"""Data-parallel PyTorch baseline: DistributedDataParallel over gloo.

Starts --workers processes (default 2) on 127.0.0.1, one thread each, and
trains the same models as pytorch_baseline.py with batch 64 *per worker*
(global batch 64 x workers); DDP averages the gradients every step.

Measures, for each model:
  (a) aggregate training throughput in samples/s (all workers together):
      forward + backward (with gradient all-reduce) + SGD step on pre-shuffled
      in-memory shards, after a warm-up, over --seconds of wall time;
  (b) time to the test-accuracy target (mlp 0.88, lenet 0.90): each epoch is
      one shuffled pass over the 60k training images split evenly between the
      workers; every 1/4 epoch the workers evaluate one half of the 10k test
      set each and all-reduce the count of correct answers.  Training seconds
      (rank 0's clock) exclude evaluation; wall seconds include it.

Setup: as pytorch_baseline.py (Debian's python3-torch, system python).
Run:
  /usr/bin/python3 bench/pytorch_ddp_baseline.py --model=mlp

Progress goes to stderr; the last line of stdout is one JSON object.
"""

import os

# One thread per process, set before torch loads (spawned workers inherit it).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
# Keep gloo on the loopback interface.
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import argparse
import json
import math
import platform
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

# Data loading, models, evaluation and the lr schedule are shared with the
# single-process baseline so both measure exactly the same thing.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_baseline import (BATCH, add_common_args, EVAL_BATCH, MOMENTUM, SCHEDULES, TARGETS,  # noqa: E402
                              blas_library, load_fashion_mnist, log, lr_for_epoch,
                              make_model, schedule)

# Default schedules for DDP runs (global batch 128 with 2 workers, so half the
# steps per epoch of the single-process run); see pytorch_baseline.SCHEDULES.
# For mlp, decay after 3 epochs x0.5 at lr 0.05 was fastest (4.75-5.25 epochs,
# seeds 0-1); 3 x0.2 and 2 x0.5 took 5.0-5.75, lr 0.1 was slower or missed.
DDP_SCHEDULES = dict(SCHEDULES, mlp={"lr": 0.05, "decay_after": 3, "decay_factor": 0.5})


def free_port():
    """An unused TCP port on 127.0.0.1 for the rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build(name, lr, seed):
    # Same seed on every rank; DDP also broadcasts rank 0's weights at wrap time.
    torch.manual_seed(seed)
    model = DDP(make_model(name))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=MOMENTUM)
    return model, opt, nn.CrossEntropyLoss()


def step(model, opt, loss_fn, xb, yb):
    opt.zero_grad(set_to_none=True)
    loss_fn(model(xb), yb).backward()  # DDP all-reduces gradients in backward
    opt.step()


def ddp_throughput(name, x, y, rank, world, seconds, lr, seed, warmup_steps=50):
    model, opt, loss_fn = build(name, lr, seed)
    g = torch.Generator().manual_seed(seed)
    shard = torch.randperm(len(x), generator=g)[rank::world]  # same perm on all ranks
    xs, ys = x[shard], y[shard]
    n_batches = len(shard) // BATCH
    batches = [(xs[i * BATCH:(i + 1) * BATCH], ys[i * BATCH:(i + 1) * BATCH])
               for i in range(n_batches)]
    for i in range(warmup_steps):
        step(model, opt, loss_fn, *batches[i % n_batches])

    # All ranks must run the same number of steps (each one is a collective),
    # so rank 0 owns the clock and broadcasts "stop" every 16 steps.
    stop = torch.zeros(1, dtype=torch.int32)
    dist.barrier()
    c0 = time.process_time()
    t0 = time.perf_counter()
    steps = 0
    while True:
        step(model, opt, loss_fn, *batches[steps % n_batches])
        steps += 1
        if steps % 16 == 0:
            if rank == 0:
                stop[0] = int(time.perf_counter() - t0 >= seconds)
            dist.broadcast(stop, 0)
            if stop[0]:
                break
    dist.barrier()
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    agg = world * steps * BATCH / elapsed
    if rank == 0:
        log(f"[{name} ddp x{world}] throughput: {agg:,.0f} samples/s aggregate "
            f"({steps} steps/worker in {elapsed:.2f} s, cpu/wall {cpu / elapsed:.2f})")
    return {"samples_per_sec": round(agg, 1),
            "samples_per_sec_per_worker": round(agg / world, 1),
            "steps_per_worker": steps, "seconds": round(elapsed, 3),
            "cpu_over_wall_rank0": round(cpu / elapsed, 3), "warmup_steps": warmup_steps}


def ddp_evaluate(model, xt, yt, rank, world, batch=EVAL_BATCH):
    """Test accuracy: each rank scores its slice, correct counts are all-reduced."""
    per = math.ceil(len(xt) / world)
    lo, hi = rank * per, min(len(xt), (rank + 1) * per)
    net = model.module  # plain forward, no DDP hooks needed for inference
    net.eval()
    correct = 0
    with torch.no_grad():
        for i in range(lo, hi, batch):
            j = min(hi, i + batch)
            correct += (net(xt[i:j]).argmax(1) == yt[i:j]).sum().item()
    net.train()
    t = torch.tensor([correct], dtype=torch.int64)
    dist.all_reduce(t)
    return t.item() / len(xt)


def ddp_time_to_target(name, x, y, xt, yt, rank, world, target, lr, decay_after,
                       decay_factor, max_epochs, seed, evals_per_epoch=4):
    model, opt, loss_fn = build(name, lr, seed)
    g = torch.Generator().manual_seed(seed)
    per_rank = len(x) // world
    n_batches = math.ceil(per_rank / BATCH)  # steps per epoch, per worker
    eval_points = {math.ceil(n_batches * k / evals_per_epoch)
                   for k in range(1, evals_per_epoch + 1)}
    xs = torch.empty((per_rank,) + tuple(x.shape[1:]), dtype=x.dtype)
    ys = torch.empty(per_rank, dtype=y.dtype)

    dist.barrier()
    train_s = 0.0
    wall_t0 = time.perf_counter()
    history, reached, acc = [], None, 0.0
    for epoch in range(max_epochs):
        cur_lr = lr_for_epoch(epoch, lr, decay_after, decay_factor)
        for grp in opt.param_groups:
            grp["lr"] = cur_lr
        t = time.perf_counter()
        # Same permutation on every rank (same generator state); rank r takes
        # every world-th index, so the shards are disjoint and cover the epoch.
        shard = torch.randperm(len(x), generator=g)[rank::world][:per_rank]
        torch.index_select(x, 0, shard, out=xs)
        torch.index_select(y, 0, shard, out=ys)
        train_s += time.perf_counter() - t
        for b in range(n_batches):
            t = time.perf_counter()
            step(model, opt, loss_fn, xs[b * BATCH:(b + 1) * BATCH],
                 ys[b * BATCH:(b + 1) * BATCH])
            train_s += time.perf_counter() - t
            if b + 1 in eval_points:
                acc = ddp_evaluate(model, xt, yt, rank, world)
                ep = epoch + (b + 1) / n_batches
                history.append((round(ep, 3), round(train_s, 3), acc))
                if rank == 0:
                    log(f"[{name} ddp x{world}] epoch {ep:5.2f} lr {cur_lr:.5f} "
                        f"train {train_s:6.2f} s acc {acc:.4f}")
                # acc is identical on all ranks, so they all stop together.
                if acc >= target:
                    reached = {"epochs_to_target": round(ep, 3),
                               "seconds_to_target": round(train_s, 3),
                               "wall_seconds_to_target":
                                   round(time.perf_counter() - wall_t0, 3)}
                    break
        if reached:
            break
    result = {"target": target, "reached": reached is not None,
              "seconds_to_target": None, "wall_seconds_to_target": None,
              "epochs_to_target": None}
    if reached:
        result.update(reached)
    result.update({"final_accuracy": acc, "best_accuracy": max(h[2] for h in history),
                   "train_seconds_total": round(train_s, 3),
                   "steps_per_epoch_per_worker": n_batches,
                   "lr": lr, "decay_after_epochs": decay_after,
                   "decay_factor": decay_factor, "history": history})
    return result


def worker(rank, world, port, args, models, queue):
    # (importing pytorch_baseline already pinned the interop pool to 1 thread;
    # setting it a second time is an error in torch 1.13)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world)
    x, y, xt, yt = load_fashion_mnist()
    results = {}
    for name in models:
        r = {}
        if not args.skip_throughput:
            r["throughput"] = ddp_throughput(name, x, y, rank, world, args.seconds,
                                             schedule(name, args, DDP_SCHEDULES)[0],
                                             args.seed)
        if not args.skip_target:
            lr, da, df = schedule(name, args, DDP_SCHEDULES)
            r["time_to_target"] = ddp_time_to_target(
                name, x, y, xt, yt, rank, world,
                args.target if args.target is not None else TARGETS[name],
                lr, da, df, args.max_epochs, args.seed)
        results[name] = r
    if rank == 0:
        queue.put({"results": results, "threads_per_worker": torch.get_num_threads()})
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(ap, "mlp")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    models = ["mlp", "lenet"] if args.model == "all" else [args.model]
    load_start = round(os.getloadavg()[0], 2)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = mp.start_processes(worker, args=(args.workers, free_port(), args, models, queue),
                               nprocs=args.workers, join=False, start_method="spawn")
    out = queue.get()  # read before joining so a full pipe cannot block rank 0
    while not procs.join():  # re-raises if a worker failed
        pass

    print(json.dumps({
        "benchmark": "pytorch_ddp_baseline",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "python": platform.python_version(),
        "backend": "gloo", "workers": args.workers,
        "threads": out["threads_per_worker"],
        "blas": blas_library(),
        "batch_per_worker": BATCH, "global_batch": BATCH * args.workers,
        "momentum": MOMENTUM, "seed": args.seed,
        "loadavg_start": load_start, "loadavg_end": round(os.getloadavg()[0], 2),
        "results": out["results"],
    }))


if __name__ == "__main__":
    main()
