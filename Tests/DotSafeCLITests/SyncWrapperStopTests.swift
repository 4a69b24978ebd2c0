import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultStore

/// `dotsafe sync` run on a terminal, its rclone behind a wrapper that forks it (a shell script
/// without `exec`), the upload slowed to 1 KiB/s so that only the stop ends it. A Ctrl-C typed
/// on the terminal (which signals the terminal's foreground group: `dotsafe` alone, rclone
/// running in a session of its own) or a SIGTERM to `dotsafe` alone ends the wrapper's rclone
/// too: the sync exits with its stop's status and line, nothing of rclone is left, the storage
/// is as a cut sync leaves it, and the next sync completes.
@Suite(.serialized) struct SyncWrapperStopTests {
    typealias Sync = SyncCommandTests
    typealias Failure = SyncFailureTests
    typealias Signals = SyncSignalTests

    enum Stop: String, CaseIterable, CustomTestStringConvertible {
        case ctrlCOnTheTerminal, sigtermToTheSyncAlone
        var testDescription: String { rawValue }
    }

    @Test(arguments: Stop.allCases)
    func aStopEndsTheRcloneAWrapperForked(_ stop: Stop) throws {
        let (base, environment, first, both) = try Signals.laptopWithChangesToSend()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", laptop = base + "/laptop"
        var slow = environment
        slow["PATH"] = try Failure.rclone(base, script: """
            for last; do :; done
            case "$1:$last" in
                copy:*\(DownloadFolder.suffix)) ;;
                copy:*) : > '\(base)/up-started'; /usr/bin/rclone "$@" --bwlimit 1k; exit $? ;;
            esac
            /usr/bin/rclone "$@"; exit $?
            """)

        let sync = try TerminalProcess(MountHarness.binary, ["sync", laptop, remote, "--pattern", Sync.pattern, "--device", "laptop"],
                                       environment: slow)
        #expect(Signals.waitForFile(base + "/up-started"), "no upload began")
        #expect(waitFor { !rcloneProcesses(naming: base).isEmpty }, "the wrapper's rclone is not running")
        switch stop {
        case .ctrlCOnTheTerminal: sync.type("\u{03}")
        case .sigtermToTheSyncAlone: kill(sync.pid, SIGTERM)
        }
        let ended = sync.finish(seconds: 60)
        // A member of rclone's group that the SIGKILL reached may take a moment to leave (`helpersGone`).
        let left = Signals.helpersGone(base) ? [] : Signals.helpersRunning(base)
        for pid in left { kill(pid, SIGKILL) }
        let stopped = try #require(ended, "the sync still waited for an rclone its stop did not reach: \(left)")
        let (number, name) = stop == .ctrlCOnTheTerminal ? (SIGINT, "SIGINT") : (SIGTERM, "SIGTERM")
        #expect(stopped.status == 128 + number, "\(stopped)")
        #expect(stopped.output.contains("dotsafe: sync interrupted by \(name) after its local commit; the next sync finishes it"),
                "\(stopped)")
        #expect(left.isEmpty, "rclone outlived the sync: \(left)")
        #expect(waitFor(seconds: 30) { Signals.helpersRunning(base).isEmpty })
        try Signals.expectCutUploadsFinishedByTheNextSync(base, environment, first: first, both: both)
    }

    /// A wrapper whose upload prints an rclone error line, having forked a helper that ignores
    /// SIGTERM and keeps the wrapper's outputs open: the sync's own stop at that line (SIGTERM to
    /// the group) ends the wrapper but not the helper, which held the sync forever. It gets
    /// SIGKILL `ChildProcess.stopGraceSeconds` later: the sync fails with the line's reason
    /// (exit 1), nothing of the group is left running, the storage is clean and holds every
    /// file, the remote is untouched, and the next sync completes.
    @Test func aHelperDeafToSigtermDoesNotHoldUpTheStopAtAnErrorLine() throws {
        let (base, environment, first, both) = try Signals.laptopWithChangesToSend()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", laptop = base + "/laptop"
        var deaf = environment
        deaf["PATH"] = try Failure.rclone(base, script: """
            for last; do :; done
            case "$1:$last" in
                copy:*\(DownloadFolder.suffix)) ;;
                copy:*)
                    echo $$ > '\(base)/group'
                    /bin/sh -c 'trap "" TERM; : > "$0"; /bin/sleep 3600; :' '\(base)/deaf' &
                    until [ -e '\(base)/deaf' ]; do /bin/sleep 0.1; done
                    echo 'ERROR : big.bin: Failed to copy: injected refusal' >&2
                    wait; exit 1 ;;
            esac
            exec /usr/bin/rclone "$@"
            """)

        let sync = try TerminalProcess(MountHarness.binary, ["sync", laptop, remote, "--pattern", Sync.pattern, "--device", "laptop"],
                                       environment: deaf)
        let ended = sync.finish(seconds: 60)
        let group = Int32((try? String(contentsOfFile: base + "/group", encoding: .utf8))?.filter(\.isNumber) ?? "") ?? 0
        let left = group > 0 && !waitFor(seconds: 30, { processGroupMembers(group).isEmpty }) ? processGroupMembers(group) : []
        for pid in left + Signals.helpersRunning(base) { kill(pid, SIGKILL) }
        try #require(group > 0, "no upload began")
        let failed = try #require(ended, "the sync still waited for a helper that ignores SIGTERM: \(left)")
        #expect(failed.status == 1, "\(failed)")
        #expect(failed.output.contains("dotsafe: ") && failed.output.contains("injected refusal"), "\(failed)")
        #expect(left.isEmpty, "left running in the wrapper's group: \(left)")
        try Signals.expectCutUploadsFinishedByTheNextSync(base, environment, first: first, both: both)
    }

    /// rclone runs without the terminal: a wrapper or password command that asks there fails at
    /// once (`/dev/tty` does not open), and so does the sync, instead of waiting for an answer
    /// to a question that job control would have kept off the screen. The next sync completes.
    @Test func rcloneCannotAskOnTheTerminal() throws {
        let (base, environment, first, both) = try Signals.laptopWithChangesToSend()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let remote = base + "/remote", laptop = base + "/laptop"
        var asking = environment
        asking["PATH"] = try Failure.rclone(base, script: """
            case "$1" in copy) printf 'password? ' > /dev/tty; read answer < /dev/tty || exit 3 ;; esac
            exec /usr/bin/rclone "$@"
            """)

        let sync = try TerminalProcess(MountHarness.binary, ["sync", laptop, remote, "--pattern", Sync.pattern, "--device", "laptop"],
                                       environment: asking)
        let ended = sync.finish(seconds: 60)
        let left = Signals.helpersGone(base) ? [] : Signals.helpersRunning(base)
        for pid in left { kill(pid, SIGKILL) }
        let failed = try #require(ended, "the sync waited for an answer on the terminal")
        #expect(failed.status == 1, "\(failed)")
        #expect(failed.output.contains("dotsafe: ") && failed.output.contains("/dev/tty"), "\(failed)")
        #expect(!failed.output.contains("password?"), "rclone asked on the terminal: \(failed)")
        #expect(left.isEmpty, "rclone outlived the sync: \(left)")
        try Signals.expectCutUploadsFinishedByTheNextSync(base, environment, first: first, both: both)
    }
}
