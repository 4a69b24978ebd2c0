import DotSafeTestSupport
import Foundation
import Testing

/// Issue 14 over sync, as users type it (README "Sharing a vault"), with the built `dotsafe`,
/// real mounts, three keyrings and three storages, and one remote served by `rclone serve
/// webdav` on 127.0.0.1: A shares with B and syncs; B syncs with `--shared` and mounts; both
/// write and see each other's changes after syncs; C, with the same remote, finds nothing.
@Suite(.serialized) struct SharedSyncMountTests {
    static let patternA = SharingMountTests.patternA
    static let patternB = SharingMountTests.patternB
    static let patternC = SharingMountTests.patternC

    static func sync(_ h: MountHarness, _ remote: TestRemote, pattern: String, device: String, shared: String? = nil) -> CommandResult {
        h.dotsafe(["sync", h.storage, remote.path, "--pattern", pattern, "--device", device] + (shared.map { ["--shared", $0] } ?? []))
    }

    /// The one `synced:` line a sync prints (pattern hints may come on standard error).
    static func synced(_ result: CommandResult) -> Bool {
        result.status == 0 && result.output.hasPrefix("synced: ") && result.output.split(separator: "\n").count == 1
    }

    /// The remote's files by name, with their bytes.
    static func remoteFiles(_ remote: TestRemote) throws -> [String: Data] {
        let folder = try #require(remote.servedFolder)
        var files: [String: Data] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            files[name] = FileManager.default.contents(atPath: folder + "/" + name)
        }
        return files
    }

    @Test func aSharesWithBOverARemoteBothWriteAndCFindsNothing() throws {
        let remote = try TestRemote(.webdav)
        let a = try MountHarness(), b = try MountHarness(), c = try MountHarness()
        defer { a.finish(); b.finish(); c.finish(); remote.finish() }

        // B and C: their own vaults, and their contact codes.
        let ownB = try b.mountPoint("own")
        try #require(b.mount(ownB, pattern: Self.patternB).status == 0)
        let codeB = try SharingMountTests.contact(b, ownB).code
        b.sh("echo mine > b-own", in: ownB)
        #expect(b.lock(ownB).status == 0)
        let ownC = try c.mountPoint("own")
        try #require(c.mount(ownC, pattern: Self.patternC).status == 0)
        let codeC = try SharingMountTests.contact(c, ownC).code
        #expect(c.lock(ownC).status == 0)

        // A: a vault with files, shared with B's code, then synced: the grant goes up with it.
        let vaultA = try a.mountPoint()
        try #require(a.mount(vaultA, pattern: Self.patternA).status == 0)
        a.sh("echo from-a > hello && mkdir docs && echo x > docs/x", in: vaultA)
        let codeA = try SharingMountTests.contact(a, vaultA).code
        let namesBefore = try SharingMountTests.storageNames(a)
        let share = a.dotsafe(["share", vaultA, "--to", codeB])
        #expect(share.status == 0 && share.output.contains("--shared \(codeA)"), "\(share)")
        let grants = try SharingMountTests.storageNames(a).subtracting(namesBefore)
        try #require(grants.count == 1)
        let grant = grants.first!
        #expect(a.lock(vaultA).status == 0)
        let upA = Self.sync(a, remote, pattern: Self.patternA, device: "alice")
        #expect(Self.synced(upA), "\(upA)")
        let onRemote = try Self.remoteFiles(remote)
        #expect(onRemote[grant] != nil, "the grant is on the remote at its name")
        #expect(onRemote.count % 16 == 0 && onRemote.values.allSatisfy { $0.count == 262_192 })

        // C, with the same remote: with A's code it gets the line it gets for a code that shared
        // nothing with anyone (B's), and neither changes C's storage or the remote.
        let before = try c.storageSnapshot(), remoteBefore = try Self.remoteFiles(remote)
        let none = SharingMountTests.refusal(Self.sync(c, remote, pattern: Self.patternC, device: "carol", shared: codeB))
        #expect(none == "dotsafe: no vault shared by that contact code with the vault this pattern opens is in this storage or on the remote")
        #expect(SharingMountTests.refusal(Self.sync(c, remote, pattern: Self.patternC, device: "carol", shared: codeA)) == none)
        #expect(try c.storageSnapshot() == before && Self.remoteFiles(remote) == remoteBefore)
        let vaultC = try c.mountPoint("shared")
        let noMount = SharingMountTests.refusal(c.mount(vaultC, pattern: Self.patternC, options: ["--shared", codeA]))
        #expect(noMount == SharingMountTests.refusal(c.mount(vaultC, pattern: Self.patternC, options: ["--shared", codeB])))
        #expect(try c.storageSnapshot() == before)

        // Bad inputs for B: a mistyped code, a code that shared nothing with B: one line each,
        // nothing changed here or on the remote.
        let snapshotB = try b.storageSnapshot()
        var typo = Array(codeA)
        typo[12] = typo[12] == "q" ? "p" : "q"
        #expect(SharingMountTests.refusal(Self.sync(b, remote, pattern: Self.patternB, device: "bob", shared: String(typo)))
            .contains("has a typo"))
        #expect(SharingMountTests.refusal(Self.sync(b, remote, pattern: Self.patternB, device: "bob", shared: codeC)) == none)
        #expect(try b.storageSnapshot() == snapshotB && Self.remoteFiles(remote) == remoteBefore)

        // B: sync --shared brings the vault into B's storage; mount --shared opens it.
        let downB = Self.sync(b, remote, pattern: Self.patternB, device: "bob", shared: codeA)
        #expect(Self.synced(downB), "\(downB)")
        let sharedB = try b.mountPoint("shared")
        try #require(b.mount(sharedB, pattern: Self.patternB, options: ["--shared", codeA]).status == 0)
        #expect(b.sh("cat hello docs/x", in: sharedB).output == "from-a\nx\n")
        b.sh("echo from-b > b.txt && echo edited-by-b > hello", in: sharedB)
        #expect(b.lock(sharedB).status == 0)
        #expect(Self.synced(Self.sync(b, remote, pattern: Self.patternB, device: "bob", shared: codeA)))

        // A syncs, sees B's changes, writes; B syncs and sees A's.
        #expect(Self.synced(Self.sync(a, remote, pattern: Self.patternA, device: "alice")))
        try #require(a.mount(vaultA, pattern: Self.patternA).status == 0)
        #expect(a.sh("cat b.txt hello", in: vaultA).output == "from-b\nedited-by-b\n")
        a.sh("echo later > later", in: vaultA)
        #expect(a.lock(vaultA).status == 0)
        #expect(Self.synced(Self.sync(a, remote, pattern: Self.patternA, device: "alice")))
        #expect(Self.synced(Self.sync(b, remote, pattern: Self.patternB, device: "bob", shared: codeA)))
        try #require(b.mount(sharedB, pattern: Self.patternB, options: ["--shared", codeA]).status == 0)
        #expect(b.sh("cat later b.txt", in: sharedB).output == "later\nfrom-b\n")
        #expect(b.lock(sharedB).status == 0)
        let fsckB = b.dotsafe(["fsck", b.storage, "--pattern", Self.patternB, "--shared", codeA])
        #expect(fsckB.status == 0, "\(fsckB)")
        let fsckOwn = b.dotsafe(["fsck", b.storage, "--pattern", Self.patternB])
        #expect(fsckOwn.status == 0, "B's own vault beside the shared one: \(fsckOwn)")
        try #require(b.mount(ownB, pattern: Self.patternB).status == 0)
        #expect(b.sh("ls", in: ownB).output == "b-own\n")
        #expect(b.lock(ownB).status == 0)

        // The remote after all this: one size, one name form, whole groups.
        let final = try Self.remoteFiles(remote)
        #expect(final.count % 16 == 0 && final[grant] != nil)
        for (name, data) in final {
            #expect(data.count == 262_192 && name.count == 26 && name.allSatisfy { "abcdefghijklmnopqrstuvwxyz234567".contains($0) })
        }
    }
}
