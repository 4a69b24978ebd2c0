import Dispatch
import Foundation
import Synchronization
import VaultCore

/// `dotsafe sync`'s lock of its vault on another thread (issue 13): its final commit and the
/// storage's re-creation (seconds) overlap the sync's last remote writes, which read nothing
/// of the local storage.
final class OverlappedLock: Sendable {
    private let vault: Vault
    private let started = Atomic<Bool>(false)
    private let outcome = Mutex<Result<Void, any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(_ vault: Vault) {
        self.vault = vault
    }

    /// Begins the lock, once.
    func start() {
        guard started.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        Thread.detachNewThread { [self] in
            let result = Result { try vault.lock() }
            outcome.withLock { $0 = result }
            finished.signal()
        }
    }

    /// The lock's end: begun now if it was not (nothing to overlap), then waited for.
    func finish() throws {
        start()
        finished.wait()
        finished.signal()
        try outcome.withLock { $0! }.get()
    }

    /// Waits for a lock that was begun, whatever its outcome (before a failed sync's discard).
    func waitIfStarted() {
        guard started.load(ordering: .sequentiallyConsistent) else { return }
        finished.wait()
        finished.signal()
    }
}
