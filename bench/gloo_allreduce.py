"""Gloo all-reduce rate on this node: the default price of `profilednn plan`'s all-reduce.

    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 bench/gloo_allreduce.py [--bytes N] [--repeats K]

Each rank all-reduces (sum) one f32 tensor of --bytes bytes (default 44,667,648: ResNet-18's
convolution weight gradients, as `profilednn plan` counts them), --repeats times after two
untimed ones. Rank 0 prints the median time and the rate as the plan uses it: the bytes a rank
sends in a ring all-reduce, 2(R-1)/R x bytes, divided by the time ("bus bandwidth"). DDP
overlaps part of its all-reduce with the backward pass, so the rate of the training run itself
(`plan --allreduce-log`) can differ.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=44_667_648)
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    x = torch.ones(a.bytes // 4, dtype=torch.float32)
    times = []
    for i in range(a.repeats + 2):
        dist.barrier()
        t = time.perf_counter()
        dist.all_reduce(x)
        if i >= 2:
            times.append(time.perf_counter() - t)
    med = sorted(times)[len(times) // 2]
    ring = 2 * (world - 1) / world * a.bytes
    if rank == 0:
        print(
            f"gloo all-reduce of {a.bytes} bytes over {world} ranks: median {med * 1e3:.1f} ms "
            f"(min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f}) = {ring / med / 1e9:.3f} GB/s "
            f"per rank (ring bytes {ring:.0f} / time)",
            flush=True,
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
