import Dispatch
import Synchronization
import VaultCore

/// Group commit (R-FS-2): changes become durable on fsync, at unmount, and otherwise once
/// `delay` has passed since the first change that is not yet committed, so that a burst of
/// small writes costs one commit, never one per write.
///
/// The file system calls `noteChange()` after each change; something calls `tick(now:)` often
/// (the background timer of `start(interval:)`, or a test with a manual clock).
public final class CommitScheduler: Sendable {
    /// Nanoseconds from the first uncommitted change to the commit.
    public let delay: Int64
    private let clock: any VaultClock
    private let commitAction: @Sendable () throws -> Void
    private let state = Mutex(State())
    private let timer = Mutex<TimerBox?>(nil)

    private struct State {
        /// When the oldest change not yet committed was made; nil when everything is committed.
        var firstChange: Int64?
        var lastError: FSError?
    }

    /// `commit` makes every change durable; it is called without any file system lock held.
    public init(delay seconds: Double = 5, clock: any VaultClock, commit: @escaping @Sendable () throws -> Void) {
        precondition(seconds >= 0, "a commit delay cannot be negative")
        delay = Int64(seconds * 1e9)
        self.clock = clock
        commitAction = commit
    }

    // Cancels only: waiting here could deadlock if the last reference went in a tick.
    deinit { timer.withLock { $0?.source.cancel() } }

    /// Records that something changed; the first change after a commit starts the delay.
    public func noteChange() {
        let now = clock.now()
        state.withLock { state in
            if state.firstChange == nil { state.firstChange = now }
        }
    }

    /// When the oldest uncommitted change was made (nil: nothing waits).
    public var pendingSince: Int64? { state.withLock { $0.firstChange } }

    /// The error of the last background commit that failed, if the one after it has not yet
    /// succeeded; it is retried after another `delay`.
    public var lastError: FSError? { state.withLock { $0.lastError } }

    /// Commits if a change has waited `delay` or longer at `now`. Returns whether it committed.
    @discardableResult
    public func tick(now: Int64) -> Bool {
        let due: Bool = state.withLock { state in
            guard let first = state.firstChange, now - first >= delay else { return false }
            // Cleared before the commit: a change made during the commit starts a new delay.
            state.firstChange = nil
            return true
        }
        guard due else { return false }
        do {
            try commitAction()
            state.withLock { $0.lastError = nil }
        } catch {
            // Retried after another delay, not at every tick: a full disk is not hammered.
            state.withLock { state in
                state.lastError = FSError(error)
                if state.firstChange == nil { state.firstChange = now }
            }
        }
        return true
    }

    /// Commits now, whatever the delay (fsync, unmount); errors go to the caller.
    public func commitNow() throws(FSError) {
        let previous: Int64? = state.withLock { state in
            defer { state.firstChange = nil }
            return state.firstChange
        }
        do {
            try commitAction()
            state.withLock { $0.lastError = nil }
        } catch {
            state.withLock { state in
                if state.firstChange == nil { state.firstChange = previous ?? clock.now() }
            }
            throw FSError(error)
        }
    }

    /// Starts a background timer that ticks every `interval` seconds with the clock's time.
    public func start(interval: Double = 0.5) {
        timer.withLock { timer in
            guard timer == nil else { return }
            let queue = DispatchQueue(label: "dotsafe.commit-scheduler")
            let source = DispatchSource.makeTimerSource(queue: queue)
            let nanoseconds = max(1, Int(interval * 1e9))
            source.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds),
                            leeway: .nanoseconds(nanoseconds / 10))
            source.setEventHandler { [weak self] in
                guard let self else { return }
                self.tick(now: self.clock.now())
            }
            source.resume()
            timer = TimerBox(source: source, queue: queue)
        }
    }

    /// Stops the timer and waits for a tick that is running.
    public func stop() {
        guard let box = timer.withLock({ timer -> TimerBox? in
            defer { timer = nil }
            return timer
        }) else { return }
        box.source.cancel()
        box.queue.sync {}
    }

    public var isRunning: Bool { timer.withLock { $0 != nil } }
}

/// The timer and its queue. Dispatch objects are thread-safe; the box is only reached through
/// the scheduler's mutex.
private struct TimerBox: @unchecked Sendable {
    let source: any DispatchSourceTimer
    let queue: DispatchQueue
}
