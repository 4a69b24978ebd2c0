import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// Mounting without a person at the terminal (R-INT-2): the pattern from a file or a command
/// (`--pattern-file`, `--pattern-command`, and `-o pattern_file=`, `-o pattern_command=`), and
/// mount(8) with an fstab line of the test's own (`mount -T`), through mount.fuse3.
@Suite struct UnattendedMountTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// A pattern file of the caller's with mode 600.
    static func patternFile(_ h: MountHarness, _ name: String = "pattern", contents: String = pattern + "\n", mode: mode_t = 0o600) throws -> String {
        let path = h.base + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
        return path
    }

    /// A mount that must fail with exactly this one line, and leave nothing mounted.
    static func refused(_ h: MountHarness, _ vault: String, _ options: [String], _ message: String, status: Int32 = 1,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let result = h.dotsafe(["mount", h.storage, vault] + options)
        #expect(result.status == status, "\(result)", sourceLocation: sourceLocation)
        #expect(result.error.split(separator: "\n").first.map(String.init) == "dotsafe: \(message)", "\(result)", sourceLocation: sourceLocation)
        #expect(!MountHarness.isMounted(vault), sourceLocation: sourceLocation)
    }

    /// The vault of `pattern` holds `note.txt` with `text` (nothing was lost by what went before).
    static func holdsNote(_ h: MountHarness, _ vault: String, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(h.mount(vault, pattern: pattern).status == 0, sourceLocation: sourceLocation)
        #expect((try? String(contentsOfFile: vault + "/note.txt", encoding: .utf8)) == text, sourceLocation: sourceLocation)
        #expect(h.lock(vault).status == 0, sourceLocation: sourceLocation)
    }

    @Test func aPatternFileOpensTheSameVaultAsTheTypedPattern() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let file = try Self.patternFile(h, contents: Self.pattern + "\r\n")
        let mounted = h.dotsafe(["mount", h.storage, vault, "--pattern-file", file])
        try #require(mounted.status == 0 && MountHarness.isMounted(vault), "\(mounted)")
        try "from a file".write(toFile: vault + "/note.txt", atomically: false, encoding: .utf8)
        #expect(h.lock(vault).status == 0)
        Self.holdsNote(h, vault, "from a file")
    }

    @Test func aPatternCommandOpensTheSameVault() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let mounted = h.dotsafe(["mount", h.storage, vault, "--pattern-command", "echo '\(Self.pattern)'"])
        try #require(mounted.status == 0 && MountHarness.isMounted(vault), "\(mounted)")
        try "from a command".write(toFile: vault + "/note.txt", atomically: false, encoding: .utf8)
        #expect(h.lock(vault).status == 0)
        Self.holdsNote(h, vault, "from a command")
        // The same through -o, as an fstab line gives it.
        let viaOption = h.dotsafe(["mount", h.storage, vault, "-o", "pattern_command=printf \(Self.pattern)"])
        try #require(viaOption.status == 0, "\(viaOption)")
        #expect((try? String(contentsOfFile: vault + "/note.txt", encoding: .utf8)) == "from a command")
        #expect(h.lock(vault).status == 0)
    }

    @Test func everyBadPatternFileIsRefusedWithOneLine() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        #expect(h.mount(vault, pattern: Self.pattern).status == 0)
        try "kept".write(toFile: vault + "/note.txt", atomically: false, encoding: .utf8)
        #expect(h.lock(vault).status == 0)

        let open = try Self.patternFile(h, "open", mode: 0o644)
        Self.refused(h, vault, ["--pattern-file", open], "pattern file \(open) is open to other users (mode 0644): chmod 600 \(open)")
        let group = try Self.patternFile(h, "group", mode: 0o620)
        Self.refused(h, vault, ["--pattern-file", group], "pattern file \(group) is open to other users (mode 0620): chmod 600 \(group)")
        Self.refused(h, vault, ["--pattern-file", h.base + "/missing"], "pattern file \(h.base)/missing does not exist")
        Self.refused(h, vault, ["--pattern-file", h.base], "pattern file \(h.base) is not a regular file")
        let fifo = h.base + "/fifo"
        mkfifo(fifo, 0o600)
        Self.refused(h, vault, ["--pattern-file", fifo], "pattern file \(fifo) is not a regular file")
        let empty = try Self.patternFile(h, "empty", contents: "")
        Self.refused(h, vault, ["--pattern-file", empty], "pattern file \(empty) holds no pattern")
        let twoLines = try Self.patternFile(h, "two", contents: Self.pattern + "\nsecond\n")
        Self.refused(h, vault, ["--pattern-file", twoLines], "pattern file \(twoLines) holds more than one line")
        let huge = try Self.patternFile(h, "huge", contents: String(repeating: "a", count: 5000))
        Self.refused(h, vault, ["--pattern-file", huge], "pattern file \(huge) holds more than 4096 bytes")
        let invalid = try Self.patternFile(h, "invalid", contents: "a1-e5\n")
        let typed = h.dotsafe(["mount", h.storage, vault, "--pattern", "a1-e5"])
        Self.refused(h, vault, ["--pattern-file", invalid], typed.error.split(separator: "\n")[0].dropFirst("dotsafe: ".count).description)
        if getuid() == 0 {
            let others = try Self.patternFile(h, "others")
            chown(others, 65534, 65534)
            Self.refused(h, vault, ["--pattern-file", others], "pattern file \(others) belongs to another user (uid 65534)")
        }
        Self.holdsNote(h, vault, "kept")
    }

    @Test func everyBadPatternCommandIsRefusedWithOneLine() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        Self.refused(h, vault, ["--pattern-command", "exit 3"], "pattern command failed (exit status 3)")
        Self.refused(h, vault, ["--pattern-command", "true"], "pattern command printed no pattern")
        Self.refused(h, vault, ["--pattern-command", "printf 'b2-c2-d3\\nb2-c2-d3\\n'"], "pattern command printed more than one line")
        // yes's own "Broken pipe" (SIGPIPE is ignored in the test's processes) is not ours to check.
        Self.refused(h, vault, ["--pattern-command", "yes b2-c2-d3 2>/dev/null"], "pattern command printed more than 4096 bytes")
        Self.refused(h, vault, ["--pattern-command", "kill -KILL $$"], "pattern command was killed by signal 9")
        // What the command writes to standard error is its own message, left to the user.
        let result = h.dotsafe(["mount", h.storage, vault, "--pattern-command", "echo no agent >&2; exit 1"])
        #expect(result.status == 1 && result.error == "no agent\ndotsafe: pattern command failed (exit status 1)\n", "\(result)")
    }

    @Test func conflictingAndUnknownOptionsAreUsageErrors() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let file = try Self.patternFile(h)
        Self.refused(h, vault, ["--pattern-file", file, "--pattern-command", "true"],
                     "--pattern-file and --pattern-command exclude each other", status: 64)
        Self.refused(h, vault, ["--pattern-stdin", "-o", "pattern_file=\(file)"],
                     "a pattern option and the mount option pattern_file or pattern_command exclude each other", status: 64)
        Self.refused(h, vault, ["-o", "pattern_file=\(file),pattern_command=true"],
                     "pattern_file and pattern_command exclude each other", status: 64)
        Self.refused(h, vault, ["-o", "pattern_file="], "mount option 'pattern_file' needs a value", status: 64)
        Self.refused(h, vault, ["-o", "pattern_file=\(file),bogus"], "unsupported mount option 'bogus': see 'dotsafe help mount'", status: 64)
    }

    /// mount(8) runs /sbin/mount.fuse3, which runs `PROGRAM STORAGE MOUNTPOINT -o OPTIONS`.
    /// It clears PATH (and HOME) first, so the installed package is found as /usr/bin/dotsafe
    /// (tools/package-test mounts `fuse.dotsafe` that way); here the built binary is named in the
    /// line itself, in mount.fuse3's `PROGRAM#STORAGE` form with type `fuse`.
    @Test(.enabled(if: getuid() == 0, "mount(8) with a helper needs root"))
    func mountsFromAnFstabLineOfItsOwn() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        let file = try Self.patternFile(h)
        let keyring = h.environment["DOTSAFE_KEYRING"]!
        defer { if MountHarness.isMounted(vault) { h.lock(vault) } }
        // Every option mount(8) and systemd may hand over, none refused.
        let options = "noauto,user,nofail,_netdev,x-systemd.automount,x-systemd.idle-timeout=5m,x-systemd.requires=a.service,"
            + "comment=x,rw,nodev,nosuid,noexec,allow_other,pattern_file=\(file),keyring=\(keyring)"
        let fstab = h.base + "/fstab"
        try "# the test's own fstab\n\(MountHarness.binary)#\(h.storage) \(vault) fuse \(options) 0 0\n"
            .write(toFile: fstab, atomically: false, encoding: .utf8)
        var environment = h.environment
        environment["DOTSAFE_KEYRING"] = nil
        let mounted = CommandResult.run("/usr/bin/mount", ["-T", fstab, vault], environment: environment)
        try #require(mounted.status == 0 && MountHarness.waitUntil(mounted: true, vault), "\(mounted)")
        #expect(mounted.output.isEmpty && mounted.error.isEmpty, "a mount from fstab says nothing: \(mounted)")
        let line = try #require(MountHarness.mountLine(vault))
        #expect(line.contains(" fuse.dotsafe ") && line.contains("noexec") && line.contains("nosuid") && line.contains("nodev"), "\(line)")
        try "from fstab".write(toFile: vault + "/note.txt", atomically: false, encoding: .utf8)
        // umount(8) locks it as well as 'dotsafe lock' does. Retried while the kernel says busy:
        // a full suite run on a loaded machine once got status 32 here (cause not found; the message now shows).
        var unmounted = CommandResult.run("/usr/bin/umount", [vault])
        for _ in 0..<20 where unmounted.status == 32 && unmounted.error.contains("busy") {
            usleep(250_000)
            unmounted = CommandResult.run("/usr/bin/umount", [vault])
        }
        #expect(unmounted.status == 0, "\(unmounted)")
        #expect(waitFor(seconds: 10) { MountHarness.daemonPID(for: vault) == nil })

        let readOnly = CommandResult.run("/usr/bin/mount", ["-t", "fuse", "-o", "ro,pattern_command=cat \(file),keyring=\(keyring)",
                                                            "\(MountHarness.binary)#\(h.storage)", vault], environment: environment)
        try #require(readOnly.status == 0 && MountHarness.waitUntil(mounted: true, vault), "\(readOnly)")
        #expect(MountHarness.mountLine(vault)?.contains(" ro,") == true)
        #expect((try? String(contentsOfFile: vault + "/note.txt", encoding: .utf8)) == "from fstab")
        #expect(h.lock(vault).status == 0)

        // A bad line fails mount(8) with dotsafe's own message, and mounts nothing.
        let bad = CommandResult.run("/usr/bin/mount", ["-t", "fuse", "-o", "pattern_file=\(h.base)/missing,keyring=\(keyring)",
                                                       "\(MountHarness.binary)#\(h.storage)", vault], environment: environment)
        #expect(bad.status != 0 && bad.error.contains("dotsafe: pattern file \(h.base)/missing does not exist"), "\(bad)")
        #expect(!MountHarness.isMounted(vault))
    }
}
