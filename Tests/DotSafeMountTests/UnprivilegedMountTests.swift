import DotSafeTestSupport
import Foundation
import Glibc
import Testing

/// A user whom fusermount3 refuses (no access to /dev/fuse, or to the mount point) is told
/// fusermount3's reason by `dotsafe mount`, not only with `-f`: the daemon's standard error is
/// /dev/null, so the reason travels in its error.
@Suite struct UnprivilegedMountTests {
    static let user = "dotsafe-test"

    @Test(.enabled(if: getuid() == 0, "runs as another user, which needs root"))
    func fusermountsReasonIsShownWithoutForeground() throws {
        if getpwnam(Self.user) == nil {
            let made = CommandResult.run("/usr/sbin/useradd", ["-m", Self.user])
            try #require(made.status == 0, "\(made)")
        }
        let home = try TestFolder.make("unprivileged")
        defer { TestFolder.remove(home) }
        // Copied by cp, not by this process: a program another test starts meanwhile would
        // inherit a descriptor open for writing, and the copy would not run (ETXTBSY).
        try #require(CommandResult.run("/bin/cp", [MountHarness.binary, home + "/dotsafe"]).status == 0)
        // The user's own folder, with a mount point in it that only root may write to.
        try #require(CommandResult.run("/bin/chown", [Self.user + ":", home, home + "/dotsafe"]).status == 0)
        try FileManager.default.createDirectory(atPath: home + "/rootowned", withIntermediateDirectories: false)
        chmod(home, 0o755)
        func asUser(_ arguments: [String], input: String? = nil) -> CommandResult {
            CommandResult.run("/usr/sbin/runuser", ["-u", Self.user, "--", "env", "-i", "PATH=/usr/bin:/bin", "HOME=\(home)",
                                                    "XDG_RUNTIME_DIR=\(home)/run", "DOTSAFE_KEYRING=\(home)/keyring",
                                                    "DOTSAFE_ALLOW_WEAK_KDF=1", "DOTSAFE_KDF_ROUNDS=1000"] + arguments,
                              input: input, folder: home)
        }
        #expect(asUser(["mkdir", "-m", "700", "run"]).status == 0)
        let made = asUser(["./dotsafe", "init", "storage"])
        try #require(made.status == 0, "\(made)")
        let before = try FileManager.default.contentsOfDirectory(atPath: home + "/storage").sorted()

        let mounted = asUser(["./dotsafe", "mount", "storage", "rootowned", "--pattern-stdin"], input: "b2-c2-d3-d4-c4-b4-a5\n")
        #expect(mounted.status == 1 && mounted.output.isEmpty, "\(mounted)")
        // "failed to open /dev/fuse: Permission denied" where /dev/fuse is 0600, else "user
        // has no write access to mountpoint": fusermount3's line, whichever it is.
        let prefix = "dotsafe: cannot mount at \(home)/rootowned: fusermount3: "
        #expect(mounted.error.hasPrefix(prefix) && mounted.error.split(separator: "\n").count == 1, "\(mounted)")
        #expect(!MountHarness.isMounted(home + "/rootowned"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: home + "/storage").sorted() == before)
    }
}
