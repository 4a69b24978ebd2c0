import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultFormat
import VaultStore

/// `dotsafe sync` stopped by a signal (README, "Ctrl-C, SIGTERM or SIGHUP during `dotsafe
/// sync`"): the built binary, a real rclone slowed down so that the signal comes in the middle
/// of a batch, a folder remote. The sync ends its rclone, cleans up as a failed sync does, says
/// in one line what the next sync does and exits 128 + the signal; a second Ctrl-C ends it at
/// once, as a kill would. Each time nothing is lost and the next sync completes.
@Suite(.serialized) struct SyncSignalTests {
    typealias Sync = SyncCommandTests
    typealias Failure = SyncFailureTests

    /// `dotsafe sync` as a process of its own, to be signalled.
    final class RunningSync {
        let process = Process()
        private let output = Pipe(), error = Pipe()

        init(_ storage: String, _ remote: String, _ environment: [String: String], device: String) throws {
            try #require(FileManager.default.isExecutableFile(atPath: MountHarness.binary), "build the dotsafe executable first")
            process.executableURL = URL(fileURLWithPath: MountHarness.binary)
            process.arguments = ["sync", storage, remote, "--pattern", Sync.pattern, "--device", device]
            process.environment = environment
            process.standardOutput = output
            process.standardError = error
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        func signal(_ number: Int32) { kill(process.processIdentifier, number) }

        /// A sync started, sent `number` once `marker` exists (which then goes; `reached` runs
        /// then), and ended.
        static func stopped(_ storage: String, _ remote: String, _ environment: [String: String], device: String,
                            at marker: String, by number: Int32,
                            reached: () throws -> Void = {}) throws -> (status: Int32?, output: String, error: String) {
            let sync = try RunningSync(storage, remote, environment, device: device)
            #expect(SyncSignalTests.waitForFile(marker), "the sync never reached \(marker)")
            try? FileManager.default.removeItem(atPath: marker)
            try reached()
            sync.signal(number)
            return sync.finish()
        }

        /// Its exit status (nil: a signal ended it) and both outputs.
        func finish() -> (status: Int32?, output: String, error: String) {
            let out = output.fileHandleForReading.readDataToEndOfFile(), err = error.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let status = process.terminationReason == .exit ? process.terminationStatus : nil
            return (status, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
        }
    }

    /// A PATH whose rclone runs the real one slowed to 1 MiB/s and marks the start of each batch
    /// copy: `down-started` into a download folder (and `down-again` from the second on, until
    /// `down-once` is removed), `up-started` to the remote.
    static func slowRclone(_ base: String) throws -> String {
        try Failure.rclone(base, script: """
            for last; do :; done
            case "$1:$last" in
                copy:*\(DownloadFolder.suffix))
                    : > '\(base)/down-started'
                    if [ -e '\(base)/down-once' ]; then : > '\(base)/down-again'; fi
                    : > '\(base)/down-once' ;;
                copy:*) : > '\(base)/up-started' ;;
            esac
            exec /usr/bin/rclone "$@" --bwlimit 1M
            """)
    }

    /// The processes whose command line names `base` (rclone children of a sync there).
    static func helpersRunning(_ base: String) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = Int32(entry), pid != getpid(), let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            return String(decoding: line, as: UTF8.self).contains(base) ? pid : nil
        }
    }

    /// No helper of the sync in `base` runs once it has ended. A member of the child's group
    /// that the SIGKILL after its leader's exit reached may still be leaving for a moment on a
    /// loaded machine (a full run saw one): a short wait, far below the upload it would finish.
    /// One caught under load: the lifeline watcher (`sh`, parent 1, running, SIGKILL pending),
    /// gone within the wait. The wait belongs here, not in `ChildProcess.run`: a process that
    /// SIGKILL reached runs no more of its own code, and only the kernel's end of it (a disk
    /// request it was in, its memory given back) keeps it in `/proc`; `kill(-group, 0)` cannot
    /// tell that end from a member still running, and counts the unreaped leader and the
    /// watcher's zombie besides.
    static func helpersGone(_ base: String) -> Bool { waitFor(seconds: 1) { helpersRunning(base).isEmpty } }

    static func waitForFile(_ path: String) -> Bool { waitFor(seconds: 60) { FileManager.default.fileExists(atPath: path) } }

    /// A laptop synced with `first` to the folder `remote`, then given 1.5 MB more (`both`):
    /// an upload of a few seconds at 1 MiB/s.
    static func laptopWithChangesToSend() throws
        -> (base: String, environment: [String: String], first: [String: [UInt8]], both: [String: [UInt8]]) {
        let first = ["first.txt": Array("first".utf8)]
        let (base, environment) = try Failure.laptop(first)
        let synced = Sync.sync(base + "/laptop", base + "/remote", environment, device: "laptop")
        try #require(synced.status == 0, "\(synced)")
        let more = ["big.bin": Failure.randomBytes(1_500_000)]
        try Failure.write(more, into: base + "/laptop", environment)
        return (base, environment, first, first.merging(more) { a, _ in a })
    }

    /// A join stopped in its downloads leaves no file of it: a new device's storage goes, and a
    /// storage that a killed join left loses what it placed and its download folder. The
    /// remote is untouched, and the next sync joins and reads every byte.
    @Test func ctrlCDuringAJoinsDownloadsLeavesNothingOfIt() throws {
        let files = ["big.bin": Failure.randomBytes(1_500_000), "small.txt": Array("small".utf8)]
        let (base, environment) = try Failure.laptop(files)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", desktop = base + "/desktop"
        let up = Sync.sync(base + "/laptop", remote, environment, device: "laptop")
        try #require(up.status == 0, "\(up)")
        let remoteBefore = try Failure.folderContents(remote)
        var slow = environment
        slow["PATH"] = try Self.slowRclone(base)

        let stopped = try RunningSync.stopped(desktop, remote, slow, device: "desktop", at: base + "/down-started", by: SIGINT)
        #expect(stopped.status == 130, "\(stopped)")
        #expect(stopped.error == "dotsafe: sync interrupted by SIGINT; nothing changed, the next sync starts over\n", "\(stopped)")
        #expect(stopped.output.isEmpty)
        #expect(Self.helpersGone(base), "rclone still runs: \(Self.helpersRunning(base))")
        #expect(!FileManager.default.fileExists(atPath: desktop), "the new device's storage stays")

        // A join killed in its downloads (the crash-safe path) leaves its storage; the next one,
        // stopped, takes away what it placed there, and its download folder.
        let killed = try RunningSync.stopped(desktop, remote, slow, device: "desktop", at: base + "/down-started", by: SIGKILL)
        #expect(killed.status == nil, "\(killed)")
        #expect(waitFor(seconds: 30) { Self.helpersRunning(base).isEmpty })
        let leftByKill = Set(try FileManager.default.contentsOfDirectory(atPath: desktop))
        // Stopped in its second batch: the first one's files (the index) are placed by then.
        for marker in ["down-once", "down-again"] { try? FileManager.default.removeItem(atPath: base + "/" + marker) }
        var placed: Set<String> = []
        let stoppedAgain = try RunningSync.stopped(desktop, remote, slow, device: "desktop", at: base + "/down-again", by: SIGINT) {
            placed = Set(try FileManager.default.contentsOfDirectory(atPath: desktop)).subtracting(leftByKill)
        }
        #expect(placed.contains(where: FileName.isWellFormed), "no file was placed before the second batch: \(placed)")
        #expect(stoppedAgain.status == 130, "\(stoppedAgain)")
        #expect(stoppedAgain.error == "dotsafe: sync interrupted by SIGINT; nothing changed, the next sync starts over\n")
        #expect(Self.helpersGone(base), "rclone still runs: \(Self.helpersRunning(base))")
        let left = try FileManager.default.contentsOfDirectory(atPath: desktop)
        #expect(!left.contains { $0.hasSuffix(DownloadFolder.suffix) }, "the download folder stays: \(left)")
        #expect(left.allSatisfy(FileName.isWellFormed) && left.count % 16 == 0, "\(left.count) files")
        #expect(Set(left).subtracting(leftByKill.filter(FileName.isWellFormed)).isEmpty, "a file of the join stays")
        #expect(try Failure.folderContents(remote) == remoteBefore, "the remote changed")

        let joined = Sync.sync(desktop, remote, environment, device: "desktop")
        #expect(joined.status == 0, "\(joined)")
        #expect(try Failure.files(desktop, environment) == files)
        Failure.expectClean(desktop, environment)
    }

    /// SIGINT or SIGTERM in the uploads of an ordinary sync: its local commit is made, the
    /// remote keeps its old state, and the next sync finishes: both sides read every byte.
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func aSignalDuringTheUploadsLeavesWhatTheNextSyncFinishes(_ number: Int32) throws {
        let (base, environment, first, both) = try Self.laptopWithChangesToSend()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", laptop = base + "/laptop"
        var slow = environment
        slow["PATH"] = try Self.slowRclone(base)

        let stopped = try RunningSync.stopped(laptop, remote, slow, device: "laptop", at: base + "/up-started", by: number)
        let name = [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"][number] ?? ""
        #expect(stopped.status == 128 + number, "\(stopped)")
        #expect(stopped.error == "dotsafe: sync interrupted by \(name) after its local commit; the next sync finishes it\n", "\(stopped)")
        #expect(stopped.output.isEmpty)
        #expect(Self.helpersGone(base), "rclone still runs: \(Self.helpersRunning(base))")
        try Self.expectCutUploadsFinishedByTheNextSync(base, environment, first: first, both: both)
    }

    /// A sync of `laptopWithChangesToSend`'s laptop stopped in its uploads: the laptop is clean
    /// and holds `both`, the remote's root still `first`; the next sync sends the rest.
    static func expectCutUploadsFinishedByTheNextSync(_ base: String, _ environment: [String: String],
                                                      first: [String: [UInt8]], both: [String: [UInt8]]) throws {
        let remote = base + "/remote", laptop = base + "/laptop"
        Failure.expectClean(laptop, environment)
        #expect(try Failure.files(laptop, environment) == both)
        #expect(try Failure.freshDevice(from: remote, base, environment) == first, "the remote's root moved")

        let again = Sync.sync(laptop, remote, environment, device: "laptop")
        #expect(again.status == 0, "\(again)")
        #expect(try Failure.freshDevice(from: remote, base, environment) == both)
        #expect(try Failure.files(laptop, environment) == both)
    }

    /// A second Ctrl-C while the sync waits for its rclone to stop ends it at once (exit 130,
    /// nothing more said), as a kill would, and everything its rclone started with it: the next
    /// sync completes all the same. Here the wait has no end of its own: the rclone leaves a
    /// process of another session holding its outputs, which no signal to its group reaches.
    /// Without it, the stop's own SIGKILL `ChildProcess.stopGraceSeconds` after the first Ctrl-C
    /// ended the wait, and on a loaded machine could do so before the second came (a CI run
    /// failed once, likeliest so).
    @Test func aSecondCtrlCEndsTheSyncAtOnce() throws {
        let (base, environment, first, both) = try Self.laptopWithChangesToSend()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", laptop = base + "/laptop", holder = base + "/holder"
        // An rclone slow to stop: SIGTERM reaches a shell that notes it, waits for its copy
        // (which SIGTERM ends too), then stays, holding the copy's outputs, until killed; and
        // the holder, in a session of its own, holds them after that.
        var slow = environment
        slow["PATH"] = try Failure.rclone(base, script: """
            /usr/bin/rclone "$@" --bwlimit 1M &
            child=$!
            trap ": > '\(base)/term-seen'" TERM
            case "$1" in copy)
                setsid /bin/sh -c 'echo $$ > "$0.pid"; mv "$0.pid" "$0"; while :; do /bin/sleep 1; done' '\(holder)' &
                : > '\(base)/up-started' ;;
            esac
            wait $child
            status=$?
            case "$1" in copy) wait $child; while :; do /bin/sleep 1; done ;; esac
            exit $status
            """)
        var holderID: Int32?
        defer { if let holderID { kill(holderID, SIGKILL) } }

        let sync = try RunningSync(laptop, remote, slow, device: "laptop")
        #expect(Self.waitForFile(base + "/up-started") && Self.waitForFile(holder))
        holderID = try Int32(String(contentsOfFile: holder, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        sync.signal(SIGINT)
        #expect(Self.waitForFile(base + "/term-seen"), "the first SIGINT did not stop rclone")
        #expect(sync.process.isRunning, "the sync did not wait for its rclone")
        sync.signal(SIGINT)
        let ended = sync.finish()
        #expect(ended.status == 130, "\(ended)")
        #expect(ended.error.isEmpty && ended.output.isEmpty, "\(ended)")
        // The shell's group is gone: the second Ctrl-C's SIGKILL, or the first's stop's, reached it.
        let group = { Self.helpersRunning(base).filter { $0 != holderID } }
        #expect(waitFor(seconds: 60) { group().isEmpty }, "the wrapper outlived the sync")
        for pid in group() { kill(pid, SIGKILL) }
        Failure.expectClean(laptop, environment)
        #expect(try Failure.files(laptop, environment) == both)

        let again = Sync.sync(laptop, remote, environment, device: "laptop")
        #expect(again.status == 0, "\(again)")
        #expect(try Failure.freshDevice(from: remote, base, environment) == both)
    }
}
