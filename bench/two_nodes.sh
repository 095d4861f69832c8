#!/usr/bin/env bash
# Two "nodes" on one machine, for checking `profilednn plan --nodes 2`: two network namespaces
# joined by a veth pair whose both ends are rate-limited with tc (a 1 Gbit/s link by default),
# each namespace pinned to its own CPU(s). Needs root (ip netns, tc).
#
#   bench/two_nodes.sh up [RATE]          # RATE as tc says it: 1gbit (default), 500mbit, ...
#   bench/two_nodes.sh run NODE CPUS CMD… # CMD in namespace pd40n<NODE>, pinned to CPUS
#   bench/two_nodes.sh down
#
# Node 0 is 10.40.0.1 (interface pd40v0), node 1 is 10.40.0.2 (pd40v1). torchrun across them:
#
#   bench/two_nodes.sh run 0 0 env GLOO_SOCKET_IFNAME=pd40v0 torchrun --nnodes 2 --node-rank 0 \
#       --nproc-per-node 1 --master-addr 10.40.0.1 --master-port 29540 train.py &
#   bench/two_nodes.sh run 1 1 env GLOO_SOCKET_IFNAME=pd40v1 torchrun --nnodes 2 --node-rank 1 \
#       --nproc-per-node 1 --master-addr 10.40.0.1 --master-port 29540 train.py
#
# Gloo must be told its interface (GLOO_SOCKET_IFNAME): both namespaces share the host name,
# which would resolve to a loopback address.
set -euo pipefail

case "${1:-}" in
up)
    rate="${2:-1gbit}"
    for n in 0 1; do ip netns add "pd40n$n"; ip -n "pd40n$n" link set lo up; done
    ip link add pd40v0 type veth peer name pd40v1
    for n in 0 1; do
        ip link set "pd40v$n" netns "pd40n$n"
        ip -n "pd40n$n" addr add "10.40.0.$((n + 1))/24" dev "pd40v$n"
        ip -n "pd40n$n" link set "pd40v$n" up
        # Segmentation offloads off: tbf would otherwise see 64 KB super-packets.
        ip netns exec "pd40n$n" ethtool -K "pd40v$n" tso off gso off gro off >/dev/null 2>&1 || true
        # Each end limits what it sends: a full-duplex link of RATE each way.
        ip netns exec "pd40n$n" tc qdisc add dev "pd40v$n" root tbf rate "$rate" burst 256kb latency 100ms
    done
    ;;
run)
    node="$2" cpus="$3"
    shift 3
    exec ip netns exec "pd40n$node" taskset -c "$cpus" "$@"
    ;;
down)
    for n in 0 1; do ip netns del "pd40n$n" 2>/dev/null || true; done
    ;;
*)
    sed -n '2,18p' "$0"
    exit 2
    ;;
esac
