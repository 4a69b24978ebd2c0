import DotSafeTestSupport
import Foundation
import Testing

/// Progress of long work (issue 16 item 7): on a terminal (a pseudo-terminal made by script(1))
/// `fsck` and `audit` draw done/total and a rate on one line and erase it before their result;
/// with standard error a pipe they print exactly what they printed before, nothing more.
@Suite struct ProgressTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// Runs the built dotsafe under script(1), so that its standard streams are a terminal;
    /// what the terminal received, control characters included.
    static func onTerminal(_ h: MountHarness, _ arguments: [String]) -> CommandResult {
        let command = ([MountHarness.binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return h.run("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], input: nil)
    }

    @Test func fsckAndAuditShowProgressOnATerminalAndNothingElsewhere() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        // 40 chunks and a few pack members.
        h.sh("head -c 10485760 /dev/urandom > big.bin && for i in 1 2 3; do echo $i > small-$i; done && sync big.bin", in: vault)
        #expect(h.lock(vault).status == 0)

        let fsck = Self.onTerminal(h, ["fsck", h.storage, "--pattern", Self.pattern])
        #expect(fsck.status == 0, "\(fsck)")
        #expect(fsck.output.contains("\r\u{1B}[Kfsck: 0/43 chunks (0%)"), "\(fsck.output)")
        let last = try #require(fsck.output.range(of: "\r\u{1B}[Kfsck: 43/43 chunks (100%)"), "\(fsck.output)")
        // A rate, then the line erased before the result.
        let after = fsck.output[last.upperBound...]
        #expect(after.hasPrefix(", ") && after.contains("/s\r\u{1B}[KChecked "), "\(after)")

        let piped = h.dotsafe(["fsck", h.storage, "--pattern-stdin"], input: Self.pattern + "\n")
        #expect(piped.status == 0 && !piped.error.contains("fsck:") && !piped.error.contains("\r") && !piped.output.contains("\r"), "\(piped)")
        #expect(piped.output.hasPrefix("Checked 5 items, 40 chunks, 3 pack members"), "\(piped)")

        let files = try FileManager.default.contentsOfDirectory(atPath: h.storage).count
        let audit = Self.onTerminal(h, ["audit", h.storage])
        #expect(audit.status == 0, "\(audit)")
        #expect(audit.output.contains("\r\u{1B}[Kaudit: \(files)/\(files) files (100%)") && audit.output.contains("\r\u{1B}[KStorage "), "\(audit.output)")
        let pipedAudit = h.dotsafe(["audit", h.storage])
        #expect(pipedAudit.status == 0 && pipedAudit.error.isEmpty && !pipedAudit.output.contains("\r"), "\(pipedAudit)")
    }
}
