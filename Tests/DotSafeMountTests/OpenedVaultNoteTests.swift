import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// `dotsafe mount` says on a terminal what it opened: an empty vault (the likeliest sign of a
/// mistyped pattern) or one with N files and folders; never when its output is not a
/// terminal, and not with --quiet (issue 15). The terminal is a real pseudo-terminal from
/// `script`.
@Suite(.serialized) struct OpenedVaultNoteTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// `dotsafe ARGUMENTS` with its standard streams on a pseudo-terminal; what the terminal showed.
    static func onTerminal(_ h: MountHarness, _ arguments: [String]) -> CommandResult {
        let command = ([MountHarness.binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return h.run("/usr/bin/script", ["-qec", command, "/dev/null"], input: nil)
    }

    @Test func emptyThenCountedOnATerminalOnly() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        defer {
            if MountHarness.isMounted(vault) { _ = h.dotsafe(["lock", vault]) }
        }
        let empty = Self.onTerminal(h, ["mount", h.storage, vault, "--pattern", Self.pattern])
        #expect(empty.status == 0, "\(empty)")
        #expect(empty.output.contains("The vault is empty: a pattern never used before opens a new, empty vault, and nothing is stored until a file is added. If you expected your files, the pattern was probably mistyped: lock it ('dotsafe lock \(vault)') and mount again."), "\(empty)")
        h.sh("echo one > a && echo two > b && mkdir folder && echo three > folder/c", in: vault)
        #expect(h.dotsafe(["lock", vault]).status == 0)

        let full = Self.onTerminal(h, ["mount", h.storage, vault, "--pattern", Self.pattern])
        #expect(full.output.contains("Opened a vault with 4 files and folders."), "\(full)")
        #expect(!full.output.contains("empty"))
        #expect(h.dotsafe(["lock", vault]).status == 0)

        let quiet = Self.onTerminal(h, ["mount", h.storage, vault, "--pattern", Self.pattern, "--quiet"])
        #expect(quiet.status == 0 && quiet.output.contains("Mounted the vault") && !quiet.output.contains("Opened a vault"), "\(quiet)")
        #expect(h.dotsafe(["lock", vault]).status == 0)

        // Not a terminal (a pipe, as from a script or a service): nothing is said.
        let piped = h.mount(vault, pattern: Self.pattern)
        #expect(piped.status == 0 && !piped.output.contains("Opened") && !piped.error.contains("Opened") && !piped.error.contains("empty"), "\(piped)")
        #expect(h.lock(vault).status == 0)
    }
}
