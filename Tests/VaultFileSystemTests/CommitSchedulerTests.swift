import Glibc
import Synchronization
import Testing
import VaultCore
import VaultFileSystem

/// Group commit (R-FS-2) with a clock the test moves.
@Suite struct CommitSchedulerTests {
    @Test func thousandCreatesThenOneFsyncIsExactlyOneCommit() throws {
        let h = try FileSystemHarness()
        let before = h.commits
        for i in 0..<1000 {
            try h.createFile("file-\(i)", contents: [UInt8(truncatingIfNeeded: i)])
            h.clock.advance(seconds: 0.004)
            h.fs.commitScheduler.tick(now: h.clock.now())
        }
        // 4 s have passed since the first change: no commit yet.
        #expect(h.commits == before)
        try h.fs.synchronize()
        #expect(h.commits == before + 1)
        // Nothing left: later ticks and fsyncs commit nothing more.
        h.clock.advance(seconds: 60)
        #expect(!h.fs.commitScheduler.tick(now: h.clock.now()))
        try h.fs.synchronize()
        #expect(h.commits == before + 1)
    }

    @Test func commitsOnceTheDelayHasPassedSinceTheFirstChange() throws {
        let h = try FileSystemHarness()
        let start = h.commits
        let id = try h.createFile("f")
        let handle = try h.fs.open(id, flags: O_WRONLY, caller: .root)
        defer { h.fs.release(handle) }
        // Writes every 0.1 s for 12 s: a commit at 5 s and at 10 s, never one per write.
        for i in 0..<120 {
            _ = try h.fs.write(handle, offset: UInt64(i * 10), bytes: pattern(10, seed: UInt64(i)))
            h.clock.advance(seconds: 0.1)
            h.fs.commitScheduler.tick(now: h.clock.now())
        }
        #expect(h.commits == start + 2)
        #expect(h.fs.commitScheduler.pendingSince != nil)
    }

    @Test func noCommitBeforeTheDelay() throws {
        let h = try FileSystemHarness()
        let start = h.commits
        try h.createFile("f")
        let changed = h.clock.now()
        #expect(h.fs.commitScheduler.pendingSince == changed)
        #expect(!h.fs.commitScheduler.tick(now: changed + 4_999_999_999))
        #expect(h.commits == start)
        #expect(h.fs.commitScheduler.tick(now: changed + 5_000_000_000))
        #expect(h.commits == start + 1)
        #expect(h.fs.commitScheduler.pendingSince == nil)
        // Reads change nothing and start no delay.
        _ = try h.readAll(try h.lookup("f").inode)
        _ = try h.fs.attributes(h.root)
        #expect(h.fs.commitScheduler.pendingSince == nil)
    }

    @Test func committedChangesSurviveWithoutClose() throws {
        let h = try FileSystemHarness()
        try h.createFile("kept", contents: pattern(1234))
        h.clock.advance(seconds: 5)
        h.fs.commitScheduler.tick(now: h.clock.now())
        try h.createFile("lost")
        // The process dies: the storage is what it is now (no close, no lock).
        h.storage.processCrash()
        let again = try h.reopened()
        #expect(try again.readAll(try again.lookup("kept").inode) == pattern(1234))
        #expect(throws: FSError.notFound) { try again.lookup("lost") }
    }

    @Test func failedCommitIsRetriedAfterAnotherDelay() throws {
        let clock = ManualClock()
        let failures = Mutex(1)
        let attempts = Mutex(0)
        let scheduler = CommitScheduler(delay: 5, clock: clock) {
            attempts.withLock { $0 += 1 }
            try failures.withLock { left in
                if left > 0 { left -= 1; throw VaultError.store(.noSpace) }
            }
        }
        scheduler.noteChange()
        clock.advance(seconds: 5)
        #expect(scheduler.tick(now: clock.now()))
        #expect(scheduler.lastError == .noSpace)
        #expect(!scheduler.tick(now: clock.now() + 1_000_000_000))
        #expect(scheduler.tick(now: clock.now() + 5_000_000_000))
        #expect(scheduler.lastError == nil)
        #expect(attempts.withLock { $0 } == 2)
        #expect(scheduler.pendingSince == nil)
    }

    @Test func fsyncErrorReachesTheCallerAndKeepsTheChangePending() throws {
        let clock = ManualClock()
        let scheduler = CommitScheduler(delay: 5, clock: clock) { throw VaultError.store(.noSpace) }
        scheduler.noteChange()
        #expect(throws: FSError.noSpace) { try scheduler.commitNow() }
        #expect(scheduler.pendingSince != nil)
    }

    @Test func backgroundTimerCommitsWithTheRealClock() throws {
        let h = try FileSystemHarness(clock: ManualClock(), commitDelay: 0.2)
        let scheduler = CommitScheduler(delay: 0.2, clock: SystemClock()) { [vault = h.vault] in try vault.commit() }
        scheduler.start(interval: 0.05)
        defer { scheduler.stop() }
        let start = h.commits
        try h.createFile("f")
        scheduler.noteChange()
        var waited = 0
        while h.commits == start && waited < 100 {
            usleep(20_000)
            waited += 1
        }
        #expect(h.commits == start + 1)
        scheduler.stop()
        #expect(!scheduler.isRunning)
    }
}
