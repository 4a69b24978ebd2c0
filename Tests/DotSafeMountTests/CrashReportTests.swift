import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// A daemon that dies of a fault says nothing of its memory. Swift's backtracer, in a build
/// that has it, catches the fault signals and prints each register with the 16 bytes it points
/// at to standard error, where a key or a file's bytes can be (it printed a test's secret so);
/// for `mount -f` under systemd that is the journal. The daemon puts those signals back to the
/// kernel's default (`ProcessHygiene.disableMemoryDumps`): the kernel ends it, and, not
/// dumpable, it leaves no core file either. (The backtracer also left the daemon hung once it
/// had printed, its mount still there.)
@Suite struct CrashReportTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    @Test(arguments: [SIGSEGV, SIGBUS, SIGILL, SIGABRT])
    func aDaemonEndedByAFaultSignalPrintsNothingOfItsMemory(signal number: Int32) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let errors = h.base + "/foreground.err"
        #expect(FileManager.default.createFile(atPath: errors, contents: nil))
        let (process, output) = try h.startForeground(vault, pattern: Self.pattern,
                                                      standardError: try FileHandle(forWritingTo: URL(fileURLWithPath: errors)))
        var said = ""
        while !said.contains("Mounted the vault"), case let data = output.fileHandleForReading.availableData, !data.isEmpty {
            said += String(decoding: data, as: UTF8.self)
        }
        try #require(said.contains("Mounted the vault"), "\(said)")
        h.sh("echo 'a line of plaintext' > notes.txt && cat notes.txt > /dev/null", in: vault)
        kill(process.processIdentifier, number)
        // Swift's backtracer, once it has printed, left the daemon waiting on a futex, mounted.
        let ended = waitFor(seconds: 20) { !process.isRunning }
        if !ended { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(ended, "the daemon did not end at signal \(number)")
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == number,
                "\(process.terminationReason) \(process.terminationStatus)")
        let report = try String(contentsOfFile: errors, encoding: .utf8)
        for mark in ["Registers", "Backtracing", "crashed", "Thread 0"] {
            #expect(!report.contains(mark), "standard error after signal \(number):\n\(report)")
        }
    }
}
