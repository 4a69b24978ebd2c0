import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// The systemd user unit (packaging/dotsafe@.service) as systemd would run it, with no systemd:
/// its ExecStart, from the unit file itself, under a listening NOTIFY_SOCKET must report
/// READY=1 once the vault is mounted; its ExecStop, or SIGTERM (what systemd sends without
/// one), must lock the vault with everything written. `systemd-analyze verify` of the installed
/// unit is in tools/package-test (it needs /usr/bin/dotsafe).
@Suite struct ServiceUnitTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// ExecStart and ExecStop of the unit file, with its settings and specifiers filled in the
    /// way systemd fills them, and the built binary for /usr/bin/dotsafe.
    static func commands(storage: String, patternFile: String, mountPoint: String) throws -> (start: [String], stop: [String]) {
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("packaging/dotsafe@.service")
        let text = try String(contentsOf: unit, encoding: .utf8)
        func command(_ key: String) throws -> [String] {
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(key + "=") })
            return line.dropFirst(key.count + 1).split(separator: " ").map { word in
                switch word {
                case "/usr/bin/dotsafe": MountHarness.binary
                case "${PATTERN_FILE}": patternFile
                case "${STORAGE}": storage
                case "%f": mountPoint
                default: String(word)
                }
            }
        }
        return (try command("ExecStart"), try command("ExecStop"))
    }

    @Test(arguments: ["path", "abstract"])
    func execStartReportsReadyAndExecStopOrSIGTERMLocks(socketKind: String) throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let patternFile = h.base + "/pattern"
        try (Self.pattern + "\n").write(toFile: patternFile, atomically: false, encoding: .utf8)
        chmod(patternFile, 0o600)
        let notify = try DatagramListener(name: socketKind == "path" ? h.base + "/notify" : "@dotsafe-test-notify-\(UUID().uuidString)")
        let (start, stop) = try Self.commands(storage: h.storage, patternFile: patternFile, mountPoint: vault)
        var environment = h.environment
        environment["NOTIFY_SOCKET"] = notify.name

        func startService() throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: start[0])
            process.arguments = Array(start.dropFirst())
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }

        let service = try startService()
        defer { if service.isRunning { service.terminate() } }
        #expect(notify.receive() == "READY=1")
        // READY=1 comes once the vault is served, not before.
        #expect(MountHarness.isMounted(vault))
        try "written under the unit".write(toFile: vault + "/note.txt", atomically: false, encoding: .utf8)
        let stopped = CommandResult.run(stop[0], Array(stop.dropFirst()), environment: environment)
        #expect(stopped.status == 0, "\(stopped)")
        service.waitUntilExit()
        #expect(service.terminationStatus == 0)
        #expect(notify.receive() == "STOPPING=1")
        #expect(!MountHarness.isMounted(vault))

        let again = try startService()
        defer { if again.isRunning { again.terminate() } }
        #expect(notify.receive() == "READY=1")
        #expect((try? String(contentsOfFile: vault + "/note.txt", encoding: .utf8)) == "written under the unit")
        try "changed, then SIGTERM".write(toFile: vault + "/note.txt", atomically: false, encoding: .utf8)
        kill(again.processIdentifier, SIGTERM)
        again.waitUntilExit()
        #expect(again.terminationStatus == 0)
        #expect(!MountHarness.isMounted(vault))
        #expect(h.mount(vault, pattern: Self.pattern).status == 0)
        #expect((try? String(contentsOfFile: vault + "/note.txt", encoding: .utf8)) == "changed, then SIGTERM")
        #expect(h.lock(vault).status == 0)
    }
}
