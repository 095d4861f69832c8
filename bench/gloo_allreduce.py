"""Gloo all-reduce rates on this node and between nodes: the prices of `profilednn plan`'s
all-reduce.

    OMP_NUM_THREADS=1 torchrun --nproc-per-node 2 bench/gloo_allreduce.py [--bytes N] [--repeats K]
    # several nodes: the same on each node, with --nnodes N --node-rank K --master-addr …

Each rank all-reduces (sum) one f32 tensor of --bytes bytes (default 44,667,648: ResNet-18's
convolution weight gradients, as `profilednn plan` counts them), --repeats times after two
untimed ones, in up to three groups, each where it can be formed:

* `intra-node`: the ranks of one node (LOCAL_WORLD_SIZE > 1), Gloo through the node's own
  loopback. The rate is the one `plan --allreduce-gbps` takes: the bytes a rank sends in a ring
  all-reduce, 2(L-1)/L x bytes, divided by the time ("bus bandwidth", GB/s per rank).
* `inter-node`: one rank per node (the ranks of the same local rank; several nodes), Gloo over
  TCP between the nodes. Printed as the network rate `plan --network-gbps` takes: the bytes a
  node sends, 2(N-1)/N x bytes, per second, in Gbit/s.
* `world`: every rank (what DDP does), with the time `plan --nodes` predicts from the two rates
  above (docs/projection.md, "Plan across nodes").

Rank 0 prints the median time of each. DDP overlaps part of its all-reduce with the backward
pass, so the rate of the training run itself (`plan --allreduce-log`) can differ.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist


def timed(x, group, repeats):
    times = []
    for i in range(repeats + 2):
        dist.barrier(group=group)
        t = time.perf_counter()
        dist.all_reduce(x, group=group)
        if i >= 2:
            times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2], min(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=44_667_648)
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if world % local:
        raise SystemExit(f"{world} ranks are not whole nodes of {local}")
    nodes = world // local
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    x = torch.ones(a.bytes // 4, dtype=torch.float32)
    # Every rank creates every group, in the same order (new_group is collective).
    node_groups = [dist.new_group(list(range(n * local, (n + 1) * local))) for n in range(nodes)]
    across = [dist.new_group(list(range(l, world, local))) for l in range(local)]
    results = {}
    if local > 1:
        results["intra-node"] = timed(x, node_groups[rank // local], a.repeats)
    if nodes > 1:
        results["inter-node"] = timed(x, across[rank % local], a.repeats)
    results["world"] = timed(x, None, a.repeats)
    if rank == 0:
        for name, (med, lo, hi) in results.items():
            line = (f"gloo all-reduce ({name}) of {a.bytes} bytes: median {med * 1e3:.1f} ms "
                    f"(min {lo * 1e3:.1f}, max {hi * 1e3:.1f})")
            if name == "intra-node" or (name == "world" and nodes == 1):
                ring = 2 * (local - 1) / local * a.bytes
                line += f" over {local} ranks = {ring / med / 1e9:.3f} GB/s per rank (ring bytes {ring:.0f} / time)"
            elif name == "inter-node":
                sent = 2 * (nodes - 1) / nodes * a.bytes
                line += f" over {nodes} nodes = {sent * 8 / med / 1e9:.3f} Gbit/s per node (bytes a node sends {sent:.0f} / time)"
            else:
                line += f" over {nodes} nodes x {local} ranks"
            print(line, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
