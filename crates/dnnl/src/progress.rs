//! What a replay reports as it goes, and whether it should go on: passed in by the caller
//! (a terminal's progress bar, a Ctrl-C handler's flag), so that the library holds no global
//! state and two replays in one process cannot stop each other.

/// A replay's view of its caller. `step` is called before each creation, iteration or problem;
/// `stopped` between timed runs. Once `stopped` says yes (Ctrl-C), the replay ends as soon as
/// the current run does, keeping what was measured: the problems left are reported as
/// not replayed ([`profilednn_replay::SkipReason::Interrupted`]).
pub trait Progress {
    /// Step `i` of `n`, doing `what`.
    fn step(&self, i: usize, n: usize, what: &str);

    /// Whether the user asked to stop. Read often: it must be cheap (an atomic load).
    fn stopped(&self) -> bool {
        false
    }
}

/// No report, never stopped: for replays nobody watches (tests, `plan`'s splits).
pub struct Quiet;

impl Progress for Quiet {
    fn step(&self, _: usize, _: usize, _: &str) {}
}

/// `inner` with each step's description prefixed (`"{prefix}: {what}"`): one phase of a
/// longer replay, e.g. one of the heap choice's two short replays.
pub struct Prefixed<'a> {
    pub inner: &'a dyn Progress,
    pub prefix: String,
}

impl Progress for Prefixed<'_> {
    fn step(&self, i: usize, n: usize, what: &str) {
        self.inner.step(i, n, &format!("{}: {what}", self.prefix));
    }

    fn stopped(&self) -> bool {
        self.inner.stopped()
    }
}
