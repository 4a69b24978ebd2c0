import Dispatch
import Glibc
import Synchronization

/// The helper programs `ChildProcess` is running, so that a stop (`StopSignals`, a mount's lock
/// that gives up on its sync) reaches each of them, and also one that starts just after the
/// stop: a child of a process that is stopping is ended as soon as it is known.
///
/// Each child leads a process group of its own (`SpawnAttributes`), and every signal goes to
/// that group: a wrapper that runs rclone as its child, not through `exec`, would otherwise
/// take the signal alone and leave its rclone writing to the remote or the storage. A child's
/// number is its group's, and stays reserved for it until the child is reaped, which `ended`
/// comes before.
public enum RunningChildren {
    private struct State {
        var running: Set<pid_t> = []
        var stopping: Int32?
        /// Counts the stops that are over, so that a SIGKILL one of them scheduled never
        /// reaches the children of a later one (commands run one after another in a process).
        var stopsOver = 0
    }

    private static let state = Mutex(State())

    /// A child was spawned; ended at once if a stop came first.
    static func started(_ pid: pid_t) {
        state.withLock { state in
            state.running.insert(pid)
            if let signal = state.stopping { Self.signal(pid, signal) }
        }
    }

    /// Called before the child is reaped, so that its number, free again, is never signalled.
    static func ended(_ pid: pid_t) {
        _ = state.withLock { $0.running.remove(pid) }
    }

    /// The signal of the stop under way, or nil: no helper program should start.
    public static var stopSignal: Int32? { state.withLock { $0.stopping } }

    /// Sends `signal` to every child running now, and to each one started from now on.
    public static func stop(with signal: Int32) {
        state.withLock { state in
            state.stopping = signal
            for pid in state.running { Self.signal(pid, signal) }
        }
    }

    /// Sends SIGTERM to every child running now and to each one started from now on, then
    /// SIGKILL to those still running `graceSeconds` later if this stop is not over by then: a
    /// member of a child's group that ignores SIGTERM (a wrapper's `trap '' TERM`) and holds
    /// its outputs would otherwise hold its command, and the process, until a second signal.
    public static func stop(killingAfter graceSeconds: Int) {
        let stop = state.withLock { state in
            state.stopping = SIGTERM
            for pid in state.running { Self.signal(pid, SIGTERM) }
            return state.stopsOver
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(graceSeconds)) {
            state.withLock { state in
                guard state.stopsOver == stop, state.stopping == SIGTERM else { return }
                state.stopping = SIGKILL
                for pid in state.running { Self.signal(pid, SIGKILL) }
            }
        }
    }

    /// Sends `signal` to the process group that `child` leads: the child and whatever it
    /// started that stayed in its group.
    static func signal(_ child: pid_t, _ signal: Int32) { kill(-child, signal) }

    /// The stop is over (its command ended): children run as before.
    static func resume() {
        state.withLock { state in
            state.stopping = nil
            state.stopsOver += 1
        }
    }
}
