import DotSafeTestSupport
import Foundation
import Glibc
import Testing
import VaultCore
import VaultStore

/// docs/FORMAT-2-DESIGN.md §E, issue 11 item 7, with real mounts: both slots hold the newest
/// root, so a crash (a daemon killed in a commit, a torn slot) is quiet, while a committed root
/// that is missing or older in its slot makes `mount` print one line on stderr starting
/// `dotsafe: warning: ` that names the generation it opened, and `fsck` exit 1 saying so. Both
/// slots put back to one older state together is not told apart from a vault at rest (README,
/// Security model); its pages are gone by then, so it fails as a damaged index.
@Suite(.serialized) struct RollbackWarningTests {
    static let pattern = "b2-c2-d3-d4-c4-b4-a5"

    /// Paths of the vault's two slot files, and its generation (read-only open).
    static func slots(_ h: MountHarness) throws -> (paths: [String], generation: UInt64) {
        let salt = try Keyring(option: h.environment["DOTSAFE_KEYRING"], environment: h.environment).requiredPatternSalt()
        let secrets = try VaultSecrets(pattern: try Pattern(parsing: pattern), salt: salt)
        let vault = try Vault.open(storage: try Storage.open(at: h.storage), secrets: secrets, options: .likeDotsafe(readOnly: true))
        defer { try? vault.lock() }
        return (try [0, 1].map { h.storage + "/" + (try vault.storageName(ofFile: $0)) }, vault.generation)
    }

    static func session(_ h: MountHarness, _ vault: String, _ script: String) throws -> CommandResult {
        let mounted = h.mount(vault, pattern: pattern)
        try #require(mounted.status == 0, "\(mounted)")
        h.sh(script, in: vault)
        try #require(h.lock(vault).status == 0)
        return mounted
    }

    static func warnings(_ result: CommandResult) -> [Substring] {
        result.error.split(separator: "\n").filter { $0.hasPrefix("dotsafe: warning: ") }
    }

    @Test func crashesAreQuiet() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        _ = try Self.session(h, vault, "echo one > a")
        _ = try Self.session(h, vault, "echo two > b")
        // A daemon killed after writing: whatever its commits reached, nothing is said.
        try #require(h.mount(vault, pattern: Self.pattern).status == 0)
        h.sh("dd if=/dev/urandom of=big bs=256K count=8 status=none && echo three > c && sync", in: vault)
        let pid = try #require(MountHarness.daemonPID(for: vault))
        kill(pid, SIGKILL)
        for _ in 0..<100 where MountHarness.daemonPID(for: vault) != nil { usleep(50_000) }
        h.run("/bin/fusermount3", ["-u", "-z", vault], input: nil)
        let afterKill = try Self.session(h, vault, "cat a b > /dev/null")
        #expect(Self.warnings(afterKill).isEmpty, "\(afterKill)")

        // A torn copy (the slot written after the commit point, not synced): quiet too.
        let (paths, generation) = try Self.slots(h)
        let copy = paths[Int(1 - generation % 2)]
        try #require(truncate(copy, 4096) == 0)
        h.sh("truncate -s 262192 \(copy)")
        let afterTear = try Self.session(h, vault, "test \"$(cat a)\" = one")
        #expect(Self.warnings(afterTear).isEmpty, "\(afterTear)")
        let fsck = h.dotsafe(["fsck", h.storage, "--pattern", Self.pattern])
        #expect(fsck.status == 0, "\(fsck)")
    }

    @Test func anOlderSlotIsSaidAndFsckFails() throws {
        let h = try MountHarness()
        defer { h.finish() }
        let vault = try h.mountPoint()
        _ = try Self.session(h, vault, "echo one > a")
        let (paths, _) = try Self.slots(h)
        let saved = try paths.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        _ = try Self.session(h, vault, "echo two > a")
        _ = try Self.session(h, vault, "echo three > a && echo new > b")
        let (_, newest) = try Self.slots(h)

        // The newest root's own slot gets its older bytes back: the copy in the other opens.
        let original = Int(newest % 2)
        try saved[original].write(to: URL(fileURLWithPath: paths[original]))
        let fsck = h.dotsafe(["fsck", h.storage, "--pattern", Self.pattern])
        #expect(fsck.status == 1, "\(fsck)")
        #expect(fsck.output.contains("opened generation \(newest)"), "\(fsck)")
        let log = try DatagramListener(name: h.base + "/log")
        let mounted = h.mount(vault, pattern: Self.pattern, environment: ["DOTSAFE_LOG_SOCKET": log.name])
        try #require(mounted.status == 0, "\(mounted)")
        let lines = Self.warnings(mounted)
        #expect(lines.count == 1 && lines[0].contains("opened generation \(newest)"), "\(mounted)")
        // The system log says it too, with the mount point and no generation, count or path.
        let pid = try #require(MountHarness.daemonPID(for: vault))
        let logged = log.receive()
        #expect(logged == "<12>dotsafe[\(pid)]: \(vault): an index slot is missing, damaged or older than the vault's last commit: "
                + "the newest root found was opened ('dotsafe fsck' says more)")
        // Nothing is lost: the newest state is what opens.
        #expect(h.sh("cat a b && echo four > c", in: vault).output == "three\nnew\n")
        #expect(h.lock(vault).status == 0)
        // The next commit wrote the root into both slots again: quiet from here on.
        let again = try Self.session(h, vault, "true")
        #expect(Self.warnings(again).isEmpty, "\(again)")

        // Both slots put back to one older state: not told apart from a vault at rest. Here the
        // older root's pages were freed and refilled since, so it is refused as damage.
        for (path, bytes) in zip(paths, saved) { try bytes.write(to: URL(fileURLWithPath: path)) }
        let rolledBack = h.mount(vault, pattern: Self.pattern)
        #expect(rolledBack.status == 1 && rolledBack.error.contains("the vault's index is damaged"), "\(rolledBack)")
        #expect(Self.warnings(rolledBack).isEmpty, "\(rolledBack)")
    }
}
