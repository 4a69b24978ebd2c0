@testable import VaultCore
import Dispatch
import Foundation
import Testing

/// The vault's lock (`VaultLock`): one holder at a time, a try that does not wait, a throw that
/// lets go, and a second lock by the same thread that stops the process instead of hanging it.
@Suite struct VaultLockTests {
    private struct Counts {
        var total = 0
        var inside = 0
        var mostInside = 0
        var mixed: UInt64 = 0
    }

    private struct Refused: Error, Equatable { let code: Int }

    @Test func oneHolderAtATime() {
        let lock = VaultLock(Counts())
        let threads = 4, rounds = 20_000
        // Threads of their own, started together: Dispatch's pool may run fewer at once.
        let start = DispatchSemaphore(value: 0), finished = DispatchGroup()
        for _ in 0..<threads {
            finished.enter()
            Thread {
                start.wait()
                for _ in 0..<rounds {
                    lock.withLock { counts in
                        // A read and a later write: two holders at once would lose increments.
                        let before = counts.total
                        counts.inside += 1
                        counts.mostInside = max(counts.mostInside, counts.inside)
                        for step in 0..<UInt64(50) { counts.mixed = counts.mixed &* 31 &+ step }
                        counts.inside -= 1
                        counts.total = before + 1
                    }
                }
                finished.leave()
            }.start()
        }
        for _ in 0..<threads { start.signal() }
        finished.wait()
        let counts = lock.withLock { $0 }
        #expect(counts.total == threads * rounds, "no increment lost")
        #expect(counts.mostInside == 1)
    }

    @Test func aTryWhileAnotherThreadHoldsItGivesNothingAndDoesNotWait() {
        let lock = VaultLock(7)
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            lock.withLock { _ in
                holding.signal()
                release.wait()
            }
            done.signal()
        }
        holding.wait()
        #expect(lock.withLockIfAvailable { $0 } == nil)
        release.signal()
        done.wait()
        #expect(lock.withLockIfAvailable { value -> Int in
            value += 1
            return value
        } == 8)
    }

    @Test func aThrowPassesItsErrorAndLetsGo() {
        let lock = VaultLock(0)
        #expect(throws: Refused(code: 3)) {
            try lock.withLock { (value: inout Int) throws(Refused) -> Void in
                value = 5
                throw Refused(code: 3)
            }
        }
        #expect(lock.withLockIfAvailable { $0 } == 5, "free again, the change made before the throw kept")
    }

    @Test func aSecondLockByTheSameThreadStopsTheProcess() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let lock = VaultLock(0)
            lock.withLock { _ in lock.withLock { _ in } }
        }
        let said = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(said.contains("the vault's lock taken twice by one thread"))
    }
}
