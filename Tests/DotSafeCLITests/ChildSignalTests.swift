import Glibc
import SystemCalls
import Testing

/// A child starts with every signal at its default, whatever this process ignores: the mount
/// daemon ignores each signal it turns into a lock and SIGPIPE, and an inherited "ignore" would
/// keep rclone from ending at SIGTERM and a pipeline's writer from ending at SIGPIPE.
@Suite(.serialized) struct ChildSignalTests {
    @Test func aChildEndsAtASignalThisProcessIgnores() throws {
        let before = signal(SIGUSR2, SIG_IGN)
        defer { signal(SIGUSR2, before) }
        let child = try ChildProcess.run("/bin/sh", ["-c", "kill -USR2 $$; echo survived"], environment: [])
        #expect(child.status == -1 && child.output.isEmpty, "the child ignored SIGUSR2: \(child.status)")
        #expect(ProcessCalls.run("/bin/sh", ["-c", "kill -USR2 $$; exit 0"]) == -1, "the child ignored SIGUSR2")
    }
}
