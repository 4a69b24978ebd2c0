import DotSafeTestSupport
import Foundation
import Testing

/// Issue 14's revocation with real mounts, keyrings and `dotsafe unshare` (docs/FORMAT.md
/// §14.8): A shares with B and C, withdraws B's grant and writes on; C still reads everything,
/// B is told that access ended and cannot read what came after, and what B wrote after it is
/// never taken in by A. The people move storage files with `cp -a`, as in `SharingMountTests`.
/// Run on index 3 and, with the tests' switch `DOTSAFE_INDEX_THREE=0` for every command and
/// daemon, on index 2 (docs/FORMAT.md §15.7: a share and a withdrawal keep EHK).
@Suite(.serialized) struct UnshareMountTests {
    typealias Sharing = SharingMountTests
    static let patternD = "e1-d2-c3-b4-a5-a4"

    /// `from`'s files that `to` does not have (`cp -n`): a holder's new files reaching the owner
    /// without replacing any of the owner's.
    static func bringNew(_ from: MountHarness, into to: MountHarness) {
        to.sh("cp -a -n \(from.storage)/. \(to.storage)/")
    }

    @Test(arguments: [false, true])
    func aWithdrawsBWhoLosesWhatComesAfterWhileCKeepsIt(indexThree: Bool) throws {
        let switchOn = indexThree ? [:] : ["DOTSAFE_INDEX_THREE": "0"]
        let a = try MountHarness(environment: switchOn), b = try MountHarness(environment: switchOn), c = try MountHarness(environment: switchOn)
        defer { a.finish(); b.finish(); c.finish() }
        for h in [b, c] { h.sh("rm -rf \(h.storage) && cp -a \(a.storage) \(h.storage)") }
        var codes: [String] = []
        for (h, pattern) in [(b, Sharing.patternB), (c, Sharing.patternC), (c, Self.patternD)] {
            let own = try h.mountPoint(codes.count == 2 ? "d" : "own")
            try #require(h.mount(own, pattern: pattern).status == 0)
            codes.append(try Sharing.contact(h, own).code)
            #expect(h.lock(own).status == 0)
        }
        let (codeB, codeC, codeD) = (codes[0], codes[1], codes[2])

        let vaultA = try a.mountPoint()
        try #require(a.mount(vaultA, pattern: Sharing.patternA).status == 0)
        a.sh("echo from-a > hello", in: vaultA)
        let codeA = try Sharing.contact(a, vaultA).code
        let namesBefore = try Sharing.storageNames(a)
        #expect(a.dotsafe(["share", vaultA, "--to", codeB]).status == 0)
        let grantOfB = try #require(try Sharing.storageNames(a).subtracting(namesBefore).first)
        #expect(a.dotsafe(["share", vaultA, "--to", codeC]).status == 0)
        #expect(a.lock(vaultA).status == 0)
        let grantNames = try Sharing.storageNames(a)

        // B mounts the shared vault in its copy and stays mounted; B keeps its grant's bytes.
        Sharing.bring(a, into: b)
        b.sh("cp \(b.storage)/\(grantOfB) old-grant")
        let sharedB = try b.mountPoint("shared")
        try #require(b.mount(sharedB, pattern: Sharing.patternB, options: ["--shared", codeA]).status == 0)
        #expect(b.sh("cat hello", in: sharedB).output == "from-a\n")

        // Bad inputs: one line each, the storage unchanged.
        try #require(a.mount(vaultA, pattern: Sharing.patternA).status == 0)
        let before = try a.storageSnapshot()
        var typo = Array(codeB)
        typo[12] = typo[12] == "q" ? "p" : "q"
        #expect(Sharing.refusal(a.dotsafe(["unshare", vaultA, "--to", String(typo)])).contains("has a typo"))
        #expect(Sharing.refusal(a.dotsafe(["unshare", vaultA, "--to", codeD])).contains("not shared with that contact code"))
        #expect(Sharing.refusal(a.dotsafe(["unshare", vaultA, "--to", codeA])).contains("this vault's own"))
        let missing = a.dotsafe(["unshare", vaultA])
        #expect(missing.status == 64 && missing.error.hasPrefix("dotsafe: missing --to CODE"), "\(missing)")
        #expect(try a.storageSnapshot() == before)
        #expect(a.lock(vaultA).status == 0)
        try #require(a.mount(vaultA, pattern: Sharing.patternA, options: ["--read-only"]).status == 0)
        let locked = try a.storageSnapshot()
        #expect(Sharing.refusal(a.dotsafe(["unshare", vaultA, "--to", codeB])).contains("read-only"))
        #expect(try a.storageSnapshot() == locked)
        #expect(a.lock(vaultA).status == 0)

        // A withdraws B's grant and writes on.
        try #require(a.mount(vaultA, pattern: Sharing.patternA).status == 0)
        let unshare = a.dotsafe(["unshare", vaultA, "--to", codeB])
        #expect(unshare.status == 0 && unshare.output.split(separator: "\n").count == 1, "\(unshare)")
        #expect(Sharing.refusal(a.dotsafe(["unshare", vaultA, "--to", codeB])).contains("not shared with that contact code"))
        a.sh("echo after-b > later && cat hello", in: vaultA)
        #expect(a.lock(vaultA).status == 0)
        let after = try Sharing.storageNames(a)
        #expect(after.count == grantNames.count, "the withdrawal keeps the file count")
        #expect(a.sh("find \(a.storage) -type f ! -size 262192c | wc -l").output == "0\n")
        #expect(after.allSatisfy { $0.count == 26 && $0.allSatisfy { "abcdefghijklmnopqrstuvwxyz234567".contains($0) } })
        #expect(a.dotsafe(["fsck", a.storage, "--pattern", Sharing.patternA]).status == 0)

        // B, still mounted on its copy, writes: it stays in B's copy and A never takes it in.
        b.sh("echo b-later > b-later", in: sharedB)
        #expect(b.lock(sharedB).status == 0)
        Self.bringNew(b, into: a)
        try #require(a.mount(vaultA, pattern: Sharing.patternA).status == 0)
        #expect(a.sh("ls", in: vaultA).output == "hello\nlater\n")
        #expect(a.lock(vaultA).status == 0)

        // B gets A's storage: the mount says that access ended, and writes nothing.
        Sharing.bring(a, into: b)
        let withEnded = try b.storageSnapshot()
        let ended = Sharing.refusal(b.mount(sharedB, pattern: Sharing.patternB, options: ["--shared", codeA]))
        #expect(ended.contains("access to the vault shared by that contact code ended"), "\(ended)")
        #expect(Sharing.refusal(b.dotsafe(["fsck", b.storage, "--pattern", Sharing.patternB, "--shared", codeA])) == ended)
        #expect(try b.storageSnapshot() == withEnded)
        // With its old grant put back, B's keys find at most the vault as it was (A's later
        // commit may have refilled a page of that old root: then it does not mount at all).
        b.sh("cp old-grant \(b.storage)/\(grantOfB)")
        if b.mount(sharedB, pattern: Sharing.patternB, options: ["--shared", codeA, "--read-only"]).status == 0 {
            #expect(b.sh("cat later", in: sharedB, expectFailure: true).status != 0)
            #expect(b.lock(sharedB).status == 0)
        }

        // C, with A's storage, reads everything through its grant sealed again.
        Sharing.bring(a, into: c)
        let sharedC = try c.mountPoint("shared")
        let mounted = c.mount(sharedC, pattern: Sharing.patternC, options: ["--shared", codeA])
        try #require(mounted.status == 0, "\(mounted)")
        #expect(c.sh("cat hello later", in: sharedC).output == "from-a\nafter-b\n")
        #expect(c.lock(sharedC).status == 0)

        // The vault is of the index the run asked for: to a release of index 2, index 3 is newer.
        // (fsck's report itself counts the files B's copy brought in above.)
        var withoutSwitch = a.environment
        withoutSwitch["DOTSAFE_INDEX_THREE"] = "0"
        let plain = CommandResult.run(MountHarness.binary, ["fsck", a.storage, "--pattern", Sharing.patternA], environment: withoutSwitch)
        let newer = plain.error.contains("made by a newer DotSafe (format version 3)")
        #expect(newer == indexThree && (newer || plain.output.contains("Checked 3 items")), "\(plain)")
    }
}
