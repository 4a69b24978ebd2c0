import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// fusermount3 stays on after an `auto_unmount` mount as a helper that removes the mount if the
/// daemon dies, and says what goes wrong then on its standard error. The daemon catches standard
/// error in a memory file while libfuse mounts (for fusermount3's reason to refuse, which a
/// detached daemon's /dev/null would swallow): the helper must not keep that file, in either
/// mode. libfuse 3.14 runs fusermount3 with `subtype=` first quietly (standard output and error
/// on /dev/null), and only after a failure again without it: so the helper of a mount that
/// succeeded holds /dev/null, or, should a libfuse give it ours, the caller's standard error.
@Suite struct UnmountHelperTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// The fusermount3 helper the daemon `pid` started, and what its descriptor 2 is.
    static func helperStandardError(of daemon: Int32) throws -> String {
        let entries = try FileManager.default.contentsOfDirectory(atPath: "/proc").compactMap(Int32.init)
        let helpers = entries.filter { pid in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
            let lines = status.split(separator: "\n")
            return lines.contains("Name:\tfusermount3") && lines.contains("PPid:\t\(daemon)")
        }
        let helper = try #require(helpers.first, "no fusermount3 helper under the daemon \(daemon)")
        #expect(helpers.count == 1)
        return try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(helper)/fd/2")
    }

    @Test func theHelperNeverKeepsTheMemoryFileThatCaughtTheMountsMessages() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let errors = h.base + "/foreground.err"
        let (process, output) = try h.startForeground(vault, pattern: Self.pattern,
                                                      standardError: try FileHandle(forWritingTo: URL(fileURLWithPath: errors).creatingEmpty()))
        // Said once the mount is served: the kernel lists it before libfuse returns to the daemon.
        var said = ""
        while !said.contains("Mounted the vault"), case let data = output.fileHandleForReading.availableData, !data.isEmpty {
            said += String(decoding: data, as: UTF8.self)
        }
        try #require(said.contains("Mounted the vault") && MountHarness.isMounted(vault), "\(said)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/fd/2") == errors)
        let foreground = try Self.helperStandardError(of: process.processIdentifier)
        #expect(foreground == "/dev/null" || foreground == errors, "\(foreground)")
        #expect(h.lock(vault).status == 0)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        let daemon = try #require(MountHarness.daemonPID(for: vault))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(daemon)/fd/2") == "/dev/null")
        #expect(try Self.helperStandardError(of: daemon) == "/dev/null")
        #expect(h.lock(vault).status == 0)
    }
}

private extension URL {
    /// This file, made empty (a new one if it was not there).
    func creatingEmpty() throws -> URL {
        try Data().write(to: self)
        return self
    }
}
