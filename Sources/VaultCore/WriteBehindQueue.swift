import Dispatch

/// Runs write-behind jobs: on the calling thread, which keeps tests that count or inject
/// failures deterministic, or on Dispatch's threads with at most `limit` in flight, so that
/// sealing and storing one chunk overlaps the next write. A writer that finds no room waits
/// (outside the vault's lock), which bounds the memory of a long write.
final class WriteBehindQueue: Sendable {
    /// Room for jobs in flight; nil: inline.
    private let room: DispatchSemaphore?
    private let running = DispatchGroup()

    init(_ mode: Vault.WriteBehind) {
        switch mode {
        case .inline: room = nil
        case .background(let limit): room = DispatchSemaphore(value: max(1, limit))
        }
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        guard let room else { return job() }
        room.wait()
        running.enter()
        DispatchQueue.global().async { [room, running] in
            job()
            room.signal()
            running.leave()
        }
    }

    /// Counts work that a caller runs on its own thread as in flight, so that `waitUntilIdle`
    /// waits for it too: `begin` under the vault's lock where the work is decided, `end` after.
    func begin() { running.enter() }
    func end() { running.leave() }

    /// Returns when every job submitted so far has finished.
    func waitUntilIdle() { running.wait() }
}
