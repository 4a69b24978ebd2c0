import DotSafeTestSupport
import Foundation
import Glibc
import SystemCalls
import Testing

/// `dotsafe sync` whose rclone is a wrapper that ignores SIGTERM in its upload and forks a
/// child that ignores it too (`DeafRcloneWrapper`), stopped by a signal to `dotsafe` alone.
/// SIGTERM or Ctrl-C's SIGINT: the stop's SIGTERM reaches the group, which holds on, so it gets
/// SIGKILL `ChildProcess.stopGraceSeconds` later; the sync exits with its usual line and status
/// (before, it waited for a second signal). SIGKILL: nothing runs in the sync any more, and the
/// group's watcher (`ChildProcess.lifeline`) ends it (before, it went on for ever). Each time
/// no process of the wrapper's is left, the storage checks clean with its local commit, the
/// remote is untouched, and the next sync finishes the upload.
@Suite(.serialized) struct SyncDeafWrapperTests {
    typealias Failure = SyncFailureTests
    typealias Signals = SyncSignalTests

    @Test(arguments: [SIGTERM, SIGINT, SIGKILL])
    func aSignalToTheSyncEndsAWrapperDeafToSigterm(_ number: Int32) throws {
        let (base, environment, first, both) = try Signals.laptopWithChangesToSend()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", laptop = base + "/laptop"
        let wrapper = try DeafRcloneWrapper(base: base)
        var deaf = environment
        deaf["PATH"] = wrapper.path

        let sync = try Signals.RunningSync(laptop, remote, deaf, device: "laptop")
        #expect(wrapper.waitUntilStarted(), "no upload began")
        let started = try #require(wrapper.processes, "the wrapper wrote no numbers")
        #expect(isRunning(started.wrapper) && isRunning(started.child))
        sync.signal(number)
        // The grace and a margin for a loaded machine: without the SIGKILL, never. Read in /proc:
        // Foundation's `isRunning` of a killed sync was seen to wait for the wrapper to end.
        let ended = waitFor(seconds: Double(ChildProcess.stopGraceSeconds) + 30) { !isRunning(sync.process.processIdentifier) }
        let gone = waitFor(seconds: 30) { wrapper.running.isEmpty }
        let left = wrapper.running
        wrapper.kill()
        let stopped = sync.finish()
        #expect(ended, "the sync still waited for a wrapper deaf to SIGTERM: \(stopped)")
        #expect(gone, "left running of the wrapper's group: \(left)")
        if number == SIGKILL {
            #expect(stopped.status == nil, "\(stopped)")
        } else {
            let name = number == SIGTERM ? "SIGTERM" : "SIGINT"
            #expect(stopped.status == 128 + number, "\(stopped)")
            #expect(stopped.error.hasSuffix("dotsafe: sync interrupted by \(name) after its local commit; the next sync finishes it\n"),
                    "\(stopped)")
        }
        try Signals.expectCutUploadsFinishedByTheNextSync(base, environment, first: first, both: both)
    }
}
