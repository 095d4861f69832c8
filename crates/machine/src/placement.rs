//! Where ranks' threads land on a machine's sockets. Launchers (`torchrun`, `mpirun --map-by
//! core`) give rank r the consecutive cores r·T … (r+1)·T − 1, and sockets hold consecutive
//! equal shares of the cores; a rank whose cores cross a share's boundary reads half its memory
//! from the other socket and synchronises its threads across it — the method's advice is "no
//! rank spanning sockets". Shared by `plan` (splits to refuse) and the advice.

/// Whether a rank of `threads` threads, `ranks` of them placed on consecutive cores of `cores`
/// cores in `sockets` equal sockets, spans two sockets. `false` when the sockets are unknown
/// (`sockets` ≤ 1) or the cores are not whole sockets.
pub fn rank_spans_sockets(ranks: u64, threads: u64, cores: u64, sockets: u64) -> bool {
    if sockets <= 1 || threads == 0 || !cores.is_multiple_of(sockets) {
        return false;
    }
    let per_socket = cores / sockets;
    (0..ranks).any(|r| {
        let first = r * threads;
        let last = first + threads - 1;
        first / per_socket != last / per_socket
    })
}

#[cfg(test)]
mod tests {
    use super::rank_spans_sockets as spans;

    #[test]
    fn by_hand() {
        // 2 sockets × 4 cores: 1×8 spans; 2×4 and 4×2 fit.
        assert!(spans(1, 8, 8, 2));
        assert!(!spans(2, 4, 8, 2));
        assert!(!spans(4, 2, 8, 2));
        // 2 sockets × 3 cores: ranks of 2 threads straddle cores 2 and 3.
        assert!(spans(3, 2, 6, 2));
        assert!(!spans(2, 3, 6, 2));
        // One socket, or unknown: never.
        assert!(!spans(1, 8, 8, 1));
        assert!(!spans(1, 8, 8, 0));
    }
}
