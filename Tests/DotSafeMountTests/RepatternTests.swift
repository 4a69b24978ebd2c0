import DotSafeTestSupport
import Foundation
import Glibc
import Testing
@testable import VaultCore
import VaultStore

/// `dotsafe repattern` (R-KEY-6, issue 15 item 3) with the built binary and real mounts: the new
/// pattern mounts the files, the old one an empty vault; a mounted vault and every bad input are
/// refused with one line and nothing changed; progress only on a terminal.
@Suite struct RepatternTests {
    static let old = "b2-c2-d3-d4-c4-b4-a5"
    static let new = "c3-d2-d3-e4-d4-c5-b4"
    static let other = "d2-c2-b3-b4-c4-d4"

    static func repattern(_ h: MountHarness, _ input: String) -> CommandResult {
        h.dotsafe(["repattern", h.storage, "--pattern-stdin"], input: input)
    }

    static func lines(_ text: String) -> [Substring] { text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() }

    /// Mounts the vault `pattern` opens, expects `command` run in it to print `expected`, locks it.
    static func expectMounted(_ h: MountHarness, _ vault: String, pattern: String, _ command: String, prints expected: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(h.mount(vault, pattern: pattern).status == 0, sourceLocation: sourceLocation)
        #expect(h.sh(command, in: vault).output == expected, sourceLocation: sourceLocation)
        #expect(h.lock(vault).status == 0, sourceLocation: sourceLocation)
    }

    @Test func theNewPatternOpensTheFilesAndTheOldOneNothing() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.old).status == 0)
        h.sh("echo one > a && mkdir d && head -c 700000 /dev/urandom > d/big && sync d/big", in: vault)
        let sums = h.sh("sha256sum a d/big", in: vault).output

        let mounted = Self.repattern(h, "\(Self.old)\n\(Self.new)\n")
        #expect(mounted.status == 1 && Self.lines(mounted.error).count == 1, "\(mounted)")
        #expect(mounted.error.hasPrefix("dotsafe: this vault is mounted at ") && mounted.error.contains(vault)
                && mounted.error.hasSuffix(": lock it first; nothing was changed\n"), "\(mounted)")
        #expect(h.lock(vault).status == 0)

        // A second vault, at another pattern: a change to that pattern would hide it.
        try #require(h.mount(vault, pattern: Self.other).status == 0)
        h.sh("echo other > o && sync o", in: vault)
        #expect(h.lock(vault).status == 0)
        let before = try h.storageSnapshot()
        let refusals: [(String, String)] = [
            ("e1-d1-c2-c3-b4-a5\n\(Self.new)\n", "no vault opens with this pattern in \(h.storage); nothing was changed"),
            ("\(Self.old)\n\(Self.old)\n", "the new pattern is the current one; nothing was changed"),
            ("\(Self.old)\n\(Self.other)\n",
             "the new pattern already opens another vault in this storage: changing to it would hide that vault; nothing was changed"),
            ("\(Self.old)\nb2-b2-b3\n", "invalid pattern: "),
            ("\(Self.old)\n", "no new pattern on standard input (two lines: the current pattern, then the new one)"),
            ("", "no current pattern on standard input (two lines: the current pattern, then the new one)"),
        ]
        for (input, message) in refusals {
            let result = Self.repattern(h, input)
            #expect(result.status == 1 && Self.lines(result.error).count == 1 && result.output.isEmpty, "\(input): \(result)")
            #expect(result.error.hasPrefix("dotsafe: " + message), "\(input): \(result)")
            #expect(try h.storageSnapshot() == before, "\(input): the storage changed")
        }
        for arguments in [["repattern"], ["repattern", h.storage, "--pattern", Self.old]] {
            let result = h.dotsafe(arguments, input: "\(Self.old)\n\(Self.new)\n")
            #expect(result.status == 64 && result.error.hasPrefix("dotsafe: ") && result.error.hasSuffix("Try 'dotsafe help repattern'.\n"),
                    "\(arguments): \(result)")
        }
        #expect(try h.storageSnapshot() == before)

        let changed = Self.repattern(h, "\(Self.old)\n\(Self.new)\n")
        #expect(changed.status == 0 && changed.error.isEmpty, "\(changed)")
        #expect(changed.output == "Changed the pattern of the vault in \(h.storage): the new pattern opens it, the old one opens nothing.\n")
        let after = try h.storageSnapshot()
        #expect(after.count == before.count && after.values.allSatisfy { $0.hasPrefix("262192 ") }, "\(after.count) files")

        try Self.expectMounted(h, vault, pattern: Self.new, "sha256sum a d/big", prints: sums)
        try Self.expectMounted(h, vault, pattern: Self.old, "ls -A", prints: "")
        try Self.expectMounted(h, vault, pattern: Self.other, "cat o", prints: "other\n")
        let fsck = h.dotsafe(["fsck", h.storage, "--pattern-stdin"], input: Self.new + "\n")
        #expect(fsck.status == 0 && fsck.output.hasPrefix("Checked 4 items"), "\(fsck)")

        // On a terminal (script(1)), progress on one line, erased before the result; the
        // patterns come from a pipe.
        let command = "printf '%s\\n%s\\n' \(Self.new) \(Self.old) | '\(MountHarness.binary)' repattern '\(h.storage)' --pattern-stdin"
        let terminal = h.run("/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"], input: nil)
        #expect(terminal.status == 0, "\(terminal)")
        #expect(terminal.output.contains("\r\u{1B}[Krepattern: 0/7 steps (0%)"), "\(terminal.output)")
        #expect(terminal.output.contains("repattern: 7/7 steps (100%)") && terminal.output.contains("\r\u{1B}[KChanged the pattern"),
                "\(terminal.output)")
        try Self.expectMounted(h, vault, pattern: Self.old, "sha256sum a d/big", prints: sums)
    }

    /// A change cut after its commit point (§13.12 step 2: the first rename fails, injected by
    /// strace into the real binary) leaves the old record listed with role 3: the old pattern
    /// still mounts the vault, once, with a warning, and that open finishes the change.
    @Test func aMountThroughTheFormerPatternFinishesAnInterruptedChangeAndSaysSo() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.old).status == 0)
        h.sh("echo one > a && sync a", in: vault)
        #expect(h.lock(vault).status == 0)

        let cut = h.run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=renameat2", "-e", "inject=renameat2:error=EIO:when=1",
                                            MountHarness.binary, "repattern", h.storage, "--pattern-stdin"],
                        input: "\(Self.old)\n\(Self.new)\n")
        #expect(cut.status == 1 && cut.error.hasPrefix("dotsafe: ") && Self.lines(cut.error).count == 1, "\(cut)")
        let midway = try h.storageSnapshot()

        let mounted = h.mount(vault, pattern: Self.old)
        try #require(mounted.status == 0, "\(mounted)")
        #expect(mounted.error == "dotsafe: warning: this vault's pattern was changed by an earlier repattern, which was interrupted and is now "
                + "finished: use the new pattern (this pattern opens it for this session only)\n", "\(mounted)")
        #expect(h.sh("cat a", in: vault).output == "one\n")
        #expect(h.lock(vault).status == 0)
        #expect(try h.storageSnapshot().count == midway.count, "the open renamed and rewrote, made and removed nothing")

        let again = h.mount(vault, pattern: Self.new)
        try #require(again.status == 0, "\(again)")
        #expect(again.error.isEmpty && h.sh("cat a", in: vault).output == "one\n", "\(again)")
        #expect(h.lock(vault).status == 0)
        try Self.expectMounted(h, vault, pattern: Self.old, "ls -A", prints: "")
    }

    /// On a terminal it asks for the current pattern (under the grid), then the new one twice,
    /// without echo; two different entries change nothing.
    @Test func asksOnTheTerminal() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.old).status == 0)
        h.sh("echo one > a && sync a", in: vault)
        #expect(h.lock(vault).status == 0)
        let pane = try PatternPromptTests.Pane(h)
        defer { pane.close() }
        let command = "env DOTSAFE_KEYRING=\(h.environment["DOTSAFE_KEYRING"]!) DOTSAFE_ALLOW_WEAK_KDF=1 DOTSAFE_KDF_ROUNDS=1000 "
            + "\(MountHarness.binary) repattern \(h.storage) < /dev/null"
        for (attempt, again) in [(1, Self.other), (2, Self.new)] {
            // Each prompt is waited for (its count on the screen): keys sent earlier would be echoed.
            func waitFor(_ prompt: String) -> Bool {
                for _ in 0..<200 {
                    if pane.screen.components(separatedBy: prompt).count > attempt { return true }
                    usleep(50_000)
                }
                return false
            }
            pane.type(command)
            try #require(waitFor("Current pattern:"), "no prompt:\n\(pane.screen)")
            pane.type(Self.old)
            try #require(waitFor("New pattern:"), "\(pane.screen)")
            pane.type(Self.new)
            try #require(waitFor("New pattern again:"), "\(pane.screen)")
            pane.type(again)
            let result = attempt == 1 ? "dotsafe: the two entries of the new pattern differ; nothing was changed" : "Changed the pattern of the vault"
            try #require(pane.waitFor(result), "\(pane.screen)")
        }
        let screen = pane.screen
        #expect(screen.components(separatedBy: "      a   b   c   d   e\n").count == 3, "the grid once per run:\n\(screen)")
        // Nothing typed is echoed: each prompt's line holds the prompt alone.
        let promptLines = screen.split(separator: "\n").filter { $0.hasPrefix("Current pattern:") || $0.hasPrefix("New pattern") }
        #expect(promptLines == ["Current pattern:", "New pattern:", "New pattern again:", "Current pattern:", "New pattern:", "New pattern again:"],
                "echoed: \(promptLines)")
        try Self.expectMounted(h, vault, pattern: Self.new, "cat a", prints: "one\n")
    }

    /// A device that joined the vault through sync (FORMAT.md §13.11): the owner record is the
    /// first device's file, so the change is refused there with one line, nothing changed, and
    /// that storage still mounts the vault with the old pattern.
    @Test func aDeviceThatJoinedThroughSyncIsRefused() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        try #require(h.mount(vault, pattern: Self.old).status == 0)
        h.sh("echo one > a && sync a", in: vault)
        #expect(h.lock(vault).status == 0)
        let remote = h.base + "/remote", desktop = h.base + "/desktop"
        for (storage, device) in [(h.storage, "laptop"), (desktop, "desktop")] {
            let synced = h.dotsafe(["sync", storage, remote, "--pattern-stdin", "--device", device], input: Self.old + "\n")
            try #require(synced.status == 0, "\(device): \(synced)")
        }
        let files = { try FileManager.default.contentsOfDirectory(atPath: desktop).sorted().map {
            ($0, try Data(contentsOf: URL(fileURLWithPath: desktop + "/" + $0)))
        } }
        let before = try files()
        let refused = h.dotsafe(["repattern", desktop, "--pattern-stdin"], input: "\(Self.old)\n\(Self.new)\n")
        #expect(refused.status == 1 && refused.output.isEmpty, "\(refused)")
        #expect(refused.error == "dotsafe: this device joined the vault through sync: its pattern can be changed only on the device "
                + "that made it, for now; nothing was changed\n", "\(refused)")
        let after = try files()
        #expect(after.map(\.0) == before.map(\.0) && after.map(\.1) == before.map(\.1), "the desktop's storage changed")
        let mounted = h.dotsafe(["mount", desktop, vault, "--pattern-stdin"], input: Self.old + "\n")
        try #require(mounted.status == 0 && MountHarness.waitUntil(mounted: true, vault), "\(mounted)")
        #expect(h.sh("cat a", in: vault).output == "one\n")
        #expect(h.lock(vault).status == 0)
    }

    /// A vault of the format-1 release (the fixture of VaultCoreTests): refused with one line,
    /// nothing changed. Mounted and written, it is upgraded to format 2 (FORMAT.md §13.9), and
    /// then its pattern changes (§13.12, its names moved too): the new pattern mounts every file,
    /// the old one an empty vault, and fsck finds the storage clean.
    static let fixturePattern = "a1-b2-c3-d4-e5-e4-d3"

    /// The format-1 release's fixture (of VaultCoreTests) unpacked into `folder`: its storage and
    /// keyring, and a reader of the storage's file contents in name order.
    static func formatOneFixture(_ h: MountHarness, _ folder: String) -> (keyring: [String], files: () throws -> [Data]) {
        let archive = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("VaultCoreTests/Fixtures/format1.tar.gz").path
        h.sh("mkdir \(folder) && tar -xzf \(archive) -C \(folder)")
        let files = { try FileManager.default.contentsOfDirectory(atPath: folder + "/storage").sorted().map {
            try Data(contentsOf: URL(fileURLWithPath: folder + "/storage/" + $0))
        } }
        return (["--keyring", folder + "/keyring"], files)
    }

    @Test func aFormatOneVaultIsRefusedAndChangesOnceUpgraded() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let folder = h.base + "/format1"
        let (keyring, files) = Self.formatOneFixture(h, folder)
        let fixturePattern = Self.fixturePattern
        let before = try files()
        let result = h.dotsafe(keyring + ["repattern", folder + "/storage", "--pattern-stdin"], input: "\(fixturePattern)\n\(Self.new)\n")
        #expect(result.status == 1 && result.error == "dotsafe: this vault is in the format of an older DotSafe (format 1), "
                + "whose pattern cannot be changed yet; nothing was changed\n", "\(result)")
        #expect(try files() == before)

        let vault = try h.mountPoint()
        func mount(_ pattern: String) throws {
            let mounted = h.dotsafe(keyring + ["mount", folder + "/storage", vault, "--pattern-stdin"], input: pattern + "\n")
            try #require(mounted.status == 0 && MountHarness.waitUntil(mounted: true, vault), "\(mounted)")
        }
        try mount(fixturePattern)
        h.sh("echo new > added && sync added", in: vault)
        // Names, sizes and modes of everything (the fixture has entries sha256sum cannot read).
        let listing = "find . -printf '%p %s %M\\n' | sort && cat added"
        let sums = h.sh(listing, in: vault).output
        #expect(sums.contains("./added 4 ") && sums.hasSuffix("new\n"), "\(sums)")
        #expect(h.lock(vault).status == 0)
        let upgraded = try files()
        #expect(upgraded.count == before.count)
        // Free files left by the mount's commit, which also converted the index to version 3.
        let salt = try Keyring(option: folder + "/keyring", environment: h.environment).requiredPatternSalt()
        let looking = try Vault.open(storage: try Storage.open(at: folder + "/storage"),
                                     secrets: try VaultSecrets(pattern: try Pattern(parsing: fixturePattern), salt: salt),
                                     options: .likeDotsafe(readOnly: true))
        let freeFiles = looking.state.withLock { $0.writer.allocator.freeCount }
        try looking.lock()

        let changed = h.dotsafe(keyring + ["repattern", folder + "/storage", "--pattern-stdin"], input: "\(fixturePattern)\n\(Self.new)\n")
        #expect(changed.status == 0 && changed.error.isEmpty, "\(changed)")
        #expect(changed.output == "Changed the pattern of the vault in \(folder)/storage: the new pattern opens it, the old one opens nothing.\n")
        let after = try files()
        // The count stays, or grows by one group of 16 when the free files are too few for the
        // change's commit: on index 3 this vault, its names all moved, grew with 3 files free.
        #expect([upgraded.count, upgraded.count + 16].contains(after.count) && after.allSatisfy { $0.count == 262_192 },
                "\(upgraded.count) → \(after.count) files, \(freeFiles) free before")
        try mount(Self.new)
        #expect(h.sh(listing, in: vault).output == sums)
        #expect(h.lock(vault).status == 0)
        try mount(fixturePattern)
        #expect(h.sh("ls -A", in: vault).output.isEmpty)
        #expect(h.lock(vault).status == 0)
        let fsck = h.dotsafe(keyring + ["fsck", folder + "/storage", "--pattern-stdin"], input: Self.new + "\n")
        #expect(fsck.status == 0, "\(fsck)")
    }

    /// Upgraded and then shared (a grant holds the vault's RL, still the old pattern's LOC, sealed
    /// to its recipient): the change seals the grant again to the new RL (FORMAT.md §13.12 step
    /// 5a) and moves every name; the new pattern mounts the files, the old one an empty vault.
    /// (The grantee following it: SharedUpgradedPatternChangeTests, PatternChangeCrashTests.)
    @Test func anUpgradedVaultThatWasSharedChangesItsPattern() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let folder = h.base + "/format1"
        let (keyring, files) = Self.formatOneFixture(h, folder)
        let vault = try h.mountPoint()
        // A contact code to share with: another vault's, in the harness's own storage.
        try #require(h.mount(vault, pattern: Self.other).status == 0)
        let contact = h.dotsafe(["contact", vault])
        try #require(contact.status == 0, "\(contact)")
        let code = contact.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(h.lock(vault).status == 0)

        func mount(_ pattern: String) throws {
            let mounted = h.dotsafe(keyring + ["mount", folder + "/storage", vault, "--pattern-stdin"], input: pattern + "\n")
            try #require(mounted.status == 0 && MountHarness.waitUntil(mounted: true, vault), "\(mounted)")
        }
        try mount(Self.fixturePattern)
        h.sh("echo new > added && sync added", in: vault)
        let share = h.dotsafe(["share", vault, "--to", code])
        #expect(share.status == 0, "\(share)")
        #expect(h.lock(vault).status == 0)
        let before = try files()
        let changed = h.dotsafe(keyring + ["repattern", folder + "/storage", "--pattern-stdin"], input: "\(Self.fixturePattern)\n\(Self.new)\n")
        #expect(changed.status == 0 && changed.error.isEmpty, "\(changed)")
        // The move takes three free numbers: a vault with fewer gains a group of 16 (README).
        #expect([before.count, before.count + 16].contains(try files().count))
        try mount(Self.new)
        #expect(h.sh("cat added", in: vault).output == "new\n")
        #expect(h.lock(vault).status == 0)
        try mount(Self.fixturePattern)
        #expect(h.sh("ls -A", in: vault).output.isEmpty, "the old pattern opens an empty vault")
        #expect(h.lock(vault).status == 0)
    }
}
