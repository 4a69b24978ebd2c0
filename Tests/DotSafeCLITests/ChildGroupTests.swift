import DotSafeTestSupport
import Foundation
import Glibc
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
}
