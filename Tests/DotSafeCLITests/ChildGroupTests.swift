import DotSafeTestSupport
import Foundation
import Glibc
import Synchronization
import SystemCalls
import Testing

/// A helper program runs in a session and process group of its own, which a stop signals as a
/// whole (`SyncWrapperStopTests`, `SyncMountLockStopTests`); and what it leaves running there
/// when it exits, having let go of its outputs, is ended with it: a wrapper that started rclone
/// in the background and returned would otherwise leave it writing to the remote or the storage
/// after its command was over.
@Suite struct ChildGroupTests {
    @Test func whatAChildLeavesRunningInItsGroupEndsWithIt() throws {
        let child = try ChildProcess.run("/bin/sh", ["-c", "/bin/sleep 3600 </dev/null >/dev/null 2>&1 & echo $!"], environment: [])
        #expect(child.status == 0 && child.errorOutput.isEmpty, "\(child)")
        let left = try #require(Int32(String(decoding: child.output, as: UTF8.self).filter(\.isNumber)), "\(child)")
        let running = { (try? readProcFile("/proc/\(left)/cmdline")).map { $0.hasPrefix("/bin/sleep\0") } ?? false }
        #expect(waitFor(seconds: 30) { !running() }, "the sleep the child left outlived it")
        if running() { kill(left, SIGKILL) }
    }

    @Test func aChildHasNoTerminalAndLeadsItsOwnGroup() throws {
        let child = try ChildProcess.run("/bin/sh", ["-c", "echo $$; cut -d ' ' -f 5,6,7 /proc/$$/stat; : </dev/tty"],
                                         environment: ["PATH=/usr/bin:/bin"])
        let lines = String(decoding: child.output, as: UTF8.self).split(separator: "\n")
        try #require(lines.count == 2, "\(child)")
        // Its process group and session are its own number; no controlling terminal (tty_nr 0).
        #expect(lines[1] == "\(lines[0]) \(lines[0]) 0", "\(lines)")
        #expect(child.status != 0 && String(decoding: child.errorOutput, as: UTF8.self).contains("/dev/tty"), "\(child)")
    }

    /// What runs in the child's group to end it if this process is killed (`ChildProcess`'s
    /// lifeline watcher) is not the child's own child: a wrapper that waits for any child it
    /// has (Python's `os.wait()`, a C `wait(NULL)`) waited for it for ever.
    @Test func aChildHasNoChildItDidNotStart() throws {
        let script = "import os\ntry:\n    print(os.waitpid(-1, os.WNOHANG))\nexcept ChildProcessError:\n    print('none')"
        let child = try ChildProcess.run("/usr/bin/python3", ["-c", script], environment: [])
        #expect(child.status == 0 && String(decoding: child.output, as: UTF8.self) == "none\n", "\(child)")
    }

    /// `privateFiles` runs the child under umask 077 (rclone's downloads, `Rclone`); without
    /// it, the child has this process's.
    @Test func aChildWithPrivateFilesRunsUnderUmask077() throws {
        // Read, not set: the umask is the whole test process's.
        let status = try readProcFile("/proc/self/status")
        let own = try #require(status.split(separator: "\n").first { $0.hasPrefix("Umask:") }?.split(separator: "\t").last)
        try #require(own != "0077", "this process's umask is already 077")
        for (privateFiles, expected) in [(true, "0077\n"), (false, own + "\n")] {
            let child = try ChildProcess.run("/bin/sh", ["-c", "umask"], environment: [], privateFiles: privateFiles)
            #expect(child.status == 0 && String(decoding: child.output, as: UTF8.self) == expected, "\(privateFiles): \(child)")
        }
    }

    /// A child gets its three streams and nothing else of this process, not even a descriptor
    /// this process holds without close-on-exec, as it may have inherited one: a test's
    /// `dotsafe sync` held a socket of Foundation's `Process`, rclone's wrapper got it, and what
    /// the wrapper left running kept the test's `waitUntilExit` waiting after the sync was gone.
    @Test func aChildGetsItsStreamsAndNoOtherDescriptor() throws {
        let open = Glibc.open("/dev/null", O_RDONLY)
        try #require(open >= 0, "open /dev/null")
        defer { close(open) }
        let child = try ChildProcess.run("/bin/sh", ["-c", "ls /proc/$$/fd"], environment: ["PATH=/usr/bin:/bin"])
        #expect(child.status == 0, "\(child)")
        #expect(String(decoding: child.output, as: UTF8.self).split(separator: "\n") == ["0", "1", "2"], "\(child), this process's \(open) inherited")
    }

    enum OwnStop: String, CaseIterable, CustomTestStringConvertible {
        /// `stopOnErrorOutput`: rclone's first error line decides the outcome.
        case firstErrorLine
        /// `whenQuiet` says no: the remote cannot be reached.
        case quietAndGivenUp
        var testDescription: String { rawValue }
    }

    /// The child's own stops (at its first error line, or when it has gone quiet and must not
    /// go on) send SIGTERM to its group, then wait for its outputs to close. A member that
    /// ignores SIGTERM and holds them (here one the child forked, `trap '' TERM`) once held the
    /// command forever: it gets SIGKILL after `ChildProcess.stopGraceSeconds`, and nothing of
    /// the group is left.
    @Test(arguments: OwnStop.allCases)
    func aMemberDeafToSigtermDoesNotHoldUpTheChildsOwnStop(_ stop: OwnStop) throws {
        let folder = try #require(String(validatingCString: mkdtemp(strdup(NSTemporaryDirectory() + "/child-group.XXXXXX"))))
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let trigger = stop == .firstErrorLine ? "echo 'ERROR : a.bin: failed to copy' >&2" : ":"
        let script = """
            echo $$ > '\(folder)/group'
            /bin/sh -c 'trap "" TERM; : > "$0"; /bin/sleep 3600; :' '\(folder)/deaf' &
            # The stop comes once it ignores SIGTERM, not before (it would end it then).
            until [ -e '\(folder)/deaf' ]; do /bin/sleep 0.1; done
            \(trigger)
            wait
            """
        let result = Mutex<Result<ChildProcess.Result, SystemError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let outcome = Result { () throws(SystemError) in
                try ChildProcess.run("/bin/sh", ["-c", script], environment: [], stopOnErrorOutput: stop == .firstErrorLine,
                                     whenQuiet: stop == .quietAndGivenUp ? (seconds: 1, goOn: { false }) : nil)
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        let ended = done.wait(timeout: .now() + 60) == .success
        let group = Int32((try? String(contentsOfFile: folder + "/group", encoding: .utf8))?.filter(\.isNumber) ?? "") ?? 0
        try #require(group > 0, "the child never started")
        if !ended {
            // Ends the test's child, and with it the thread that waits for it.
            kill(-group, SIGKILL)
            _ = done.wait(timeout: .now() + 60)
        }
        #expect(ended, "the stop still waited for a member that ignores SIGTERM")
        let child = try #require(try result.withLock { $0 }?.get())
        #expect(child.status == -1, "SIGTERM ended the child: \(child)")
        let said = String(decoding: child.errorOutput, as: UTF8.self)
        #expect(said == (stop == .firstErrorLine ? "ERROR : a.bin: failed to copy\n" : ""), "\(child)")
        #expect(waitFor(seconds: 30) { processGroupMembers(group).isEmpty }, "left running: \(processGroupMembers(group))")
        for pid in processGroupMembers(group) { kill(pid, SIGKILL) }
    }
}
