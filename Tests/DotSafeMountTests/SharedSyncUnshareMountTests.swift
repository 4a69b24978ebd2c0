import DotSafeTestSupport
import Foundation
import Testing

/// Issue 14's revocation over sync, as users type it (README "Taking a share back"), with the
/// built `dotsafe`, real mounts and one remote served by `rclone serve webdav` on 127.0.0.1: A
/// shares with B and C, both sync; A withdraws B and syncs; C's sync follows and reads what A
/// wrote after; B's sync prints one line and changes nothing, in B's storage or on the remote.
/// And `sync --shared` refuses a storage that holds the shared vault as a `cp -a` of A's.
@Suite(.serialized) struct SharedSyncUnshareMountTests {
    typealias Sharing = SharingMountTests
    typealias Synced = SharedSyncMountTests

    @Test func aWithdrawsBOverARemote() throws {
        let remote = try TestRemote(.webdav)
        let a = try MountHarness(), b = try MountHarness(), c = try MountHarness()
        defer { a.finish(); b.finish(); c.finish(); remote.finish() }
        var codes: [String] = []
        for (h, pattern) in [(b, Sharing.patternB), (c, Sharing.patternC)] {
            let own = try h.mountPoint("own")
            try #require(h.mount(own, pattern: pattern).status == 0)
            codes.append(try Sharing.contact(h, own).code)
            #expect(h.lock(own).status == 0)
        }
        let (codeB, codeC) = (codes[0], codes[1])

        let vaultA = try a.mountPoint()
        try #require(a.mount(vaultA, pattern: Sharing.patternA).status == 0)
        a.sh("echo from-a > hello", in: vaultA)
        let codeA = try Sharing.contact(a, vaultA).code
        #expect(a.dotsafe(["share", vaultA, "--to", codeB]).status == 0)
        #expect(a.dotsafe(["share", vaultA, "--to", codeC]).status == 0)
        #expect(a.lock(vaultA).status == 0)
        #expect(Synced.synced(Synced.sync(a, remote, pattern: Sharing.patternA, device: "alice")))

        // B's storage with A's laid over it by `cp -a`: `sync --shared` refuses, nothing changed.
        b.sh("cp -a \(b.storage) \(b.storage)-before")
        Sharing.bring(a, into: b)
        let copied = try b.storageSnapshot(), remoteBefore = try Synced.remoteFiles(remote)
        let refused = Sharing.refusal(Synced.sync(b, remote, pattern: Sharing.patternB, device: "bob", shared: codeA))
        #expect(refused.hasPrefix("dotsafe: the vault shared with you in this storage was copied from another device's storage"), "\(refused)")
        #expect(try b.storageSnapshot() == copied && Synced.remoteFiles(remote) == remoteBefore)
        b.sh("rm -rf \(b.storage) && mv \(b.storage)-before \(b.storage)")

        #expect(Synced.synced(Synced.sync(b, remote, pattern: Sharing.patternB, device: "bob", shared: codeA)))
        #expect(Synced.synced(Synced.sync(c, remote, pattern: Sharing.patternC, device: "carol", shared: codeA)))

        // A withdraws B, writes and syncs; C follows.
        try #require(a.mount(vaultA, pattern: Sharing.patternA).status == 0)
        #expect(a.dotsafe(["unshare", vaultA, "--to", codeB]).status == 0)
        a.sh("echo after-b > later", in: vaultA)
        #expect(a.lock(vaultA).status == 0)
        let up = Synced.sync(a, remote, pattern: Sharing.patternA, device: "alice")
        #expect(Synced.synced(up), "\(up)")
        let follow = Synced.sync(c, remote, pattern: Sharing.patternC, device: "carol", shared: codeA)
        #expect(Synced.synced(follow), "\(follow)")
        let sharedC = try c.mountPoint("shared")
        try #require(c.mount(sharedC, pattern: Sharing.patternC, options: ["--shared", codeA]).status == 0)
        #expect(c.sh("cat hello later", in: sharedC).output == "from-a\nafter-b\n")
        #expect(c.lock(sharedC).status == 0)
        #expect(c.dotsafe(["fsck", c.storage, "--pattern", Sharing.patternC, "--shared", codeA]).status == 0)

        // B: one line, nothing changed in B's storage or on the remote.
        let storageB = try b.storageSnapshot(), remoteNow = try Synced.remoteFiles(remote)
        let ended = Sharing.refusal(Synced.sync(b, remote, pattern: Sharing.patternB, device: "bob", shared: codeA))
        #expect(ended.hasPrefix("dotsafe: access to the vault shared by that contact code ended"), "\(ended)")
        #expect(try b.storageSnapshot() == storageB && Synced.remoteFiles(remote) == remoteNow)
        let sharedB = try b.mountPoint("shared")
        try #require(b.mount(sharedB, pattern: Sharing.patternB, options: ["--shared", codeA, "--read-only"]).status == 0)
        #expect(b.sh("cat hello", in: sharedB).output == "from-a\n", "B keeps what B had")
        #expect(b.sh("cat later", in: sharedB, expectFailure: true).status != 0)
        #expect(b.lock(sharedB).status == 0)

        let final = try Synced.remoteFiles(remote)
        #expect(final.count % 16 == 0 && final.values.allSatisfy { $0.count == 262_192 })
    }
}
