import DotSafeTestSupport
import Foundation
import Testing

/// Issue 14 with real mounts and three people, each with a keyring and a pattern of their own
/// (one `MountHarness` each): A shares a vault with B's contact code, B mounts it with
/// `--shared` and reads A's files, both write; C finds nothing. Until sync exists the people
/// move the storage by copying the folder (`cp -a`), which is what a shared remote will do for
/// them; the files of the receiver's own vault stay in their copy.
@Suite(.serialized) struct SharingMountTests {
    static let patternA = "b2-c2-d3-d4-c4-b4-a5"
    static let patternB = "d1-c2-c3-c4-b5-a4"
    static let patternC = "a2-b3-c2-d3-e2-e3"

    /// `from`'s storage files into `to`'s storage, as a sync with a shared remote will bring them.
    static func bring(_ from: MountHarness, into to: MountHarness) {
        to.sh("cp -a \(from.storage)/. \(to.storage)/")
    }

    /// The one line `dotsafe contact` prints.
    static func contact(_ h: MountHarness, _ mountPoint: String) throws -> (code: String, result: CommandResult) {
        let result = h.dotsafe(["contact", mountPoint])
        try #require(result.status == 0, "\(result)")
        let lines = result.output.split(separator: "\n")
        try #require(lines.count == 1, "\(result)")
        return (String(lines[0]), result)
    }

    /// The one `dotsafe: ` line of a refusal.
    static func refusal(_ result: CommandResult) -> String {
        let lines = result.error.split(separator: "\n")
        #expect(result.status != 0 && lines.count == 1 && lines[0].hasPrefix("dotsafe: "), "\(result)")
        return String(lines.first ?? "")
    }

    static func storageNames(_ h: MountHarness) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: h.storage))
    }

    @Test func aSharesWithBWhoReadsAndBothWriteWhileCFindsNothing() throws {
        let a = try MountHarness(), b = try MountHarness(), c = try MountHarness()
        defer { a.finish(); b.finish(); c.finish() }
        // B and C start from a copy of A's storage: the place the three of them share.
        for h in [b, c] { h.sh("rm -rf \(h.storage) && cp -a \(a.storage) \(h.storage)") }

        // B's code, from B's own vault (new: `contact` commits it first).
        let ownB = try b.mountPoint("own")
        try #require(b.mount(ownB, pattern: Self.patternB).status == 0)
        let codeB = try Self.contact(b, ownB).code
        #expect(codeB.hasPrefix("dotsafe1-") && codeB.count == 67 + 12, "\(codeB)")
        b.sh("echo mine > b-own", in: ownB)
        #expect(b.lock(ownB).status == 0)

        // A shares a vault holding files.
        let vaultA = try a.mountPoint()
        try #require(a.mount(vaultA, pattern: Self.patternA).status == 0)
        a.sh("echo from-a > hello && mkdir docs && echo x > docs/x", in: vaultA)
        let codeA = try Self.contact(a, vaultA).code
        let namesBefore = try Self.storageNames(a)
        let share = a.dotsafe(["share", vaultA, "--to", codeB])
        #expect(share.status == 0 && share.output.contains(codeA) && share.output.contains("--shared \(codeA)"), "\(share)")
        #expect(!share.output.contains(Self.patternA))
        let grants = try Self.storageNames(a).subtracting(namesBefore)
        #expect(grants.count == 1, "the grant is the one new name: \(grants)")
        #expect(try Self.storageNames(a).count % 16 == 0)

        // Bad inputs: one line each, nothing written.
        let snapshot = try a.storageSnapshot()
        var typo = Array(codeB)
        typo[12] = typo[12] == "q" ? "p" : "q"
        #expect(Self.refusal(a.dotsafe(["share", vaultA, "--to", String(typo)])).contains("has a typo"))
        #expect(Self.refusal(a.dotsafe(["share", vaultA, "--to", codeA])).contains("this vault's own"))
        #expect(Self.refusal(a.dotsafe(["share", vaultA, "--to", codeB])).contains("shared with that contact code already"))
        #expect(Self.refusal(a.dotsafe(["share", vaultA, "--to", "age1qqqq"])).contains("not a DotSafe contact code"))
        #expect(try a.storageSnapshot() == snapshot)
        #expect(a.lock(vaultA).status == 0)
        try #require(a.mount(vaultA, pattern: Self.patternA, options: ["--read-only"]).status == 0)
        #expect(Self.refusal(a.dotsafe(["share", vaultA, "--to", codeB])).contains("read-only"))
        #expect(a.lock(vaultA).status == 0)
        let fsckA = a.dotsafe(["fsck", a.storage, "--pattern", Self.patternA])
        #expect(fsckA.status == 0, "a grant is one of the vault's files: \(fsckA)")

        // B mounts the shared vault in its copy, reads and writes.
        Self.bring(a, into: b)
        let sharedB = try b.mountPoint("shared")
        let mounted = b.mount(sharedB, pattern: Self.patternB, options: ["--shared", codeA])
        try #require(mounted.status == 0, "\(mounted)")
        #expect(b.sh("cat hello docs/x", in: sharedB).output == "from-a\nx\n")
        let (codeOnShared, result) = try Self.contact(b, sharedB)
        #expect(codeOnShared == codeB && result.error.contains("shared with you"), "\(result)")
        #expect(Self.refusal(b.dotsafe(["share", sharedB, "--to", codeA])).contains("only its owner can share it"))
        b.sh("echo from-b > b.txt", in: sharedB)
        #expect(b.lock(sharedB).status == 0)
        try #require(b.mount(sharedB, pattern: Self.patternB, options: ["--shared", codeA]).status == 0)
        #expect(b.sh("cat b.txt hello", in: sharedB).output == "from-b\nfrom-a\n")
        #expect(b.lock(sharedB).status == 0)
        let fsckB = b.dotsafe(["fsck", b.storage, "--pattern", Self.patternB, "--shared", codeA])
        #expect(fsckB.status == 0, "\(fsckB)")
        // B's own vault is as B left it.
        try #require(b.mount(ownB, pattern: Self.patternB).status == 0)
        #expect(b.sh("ls", in: ownB).output == "b-own\n")
        #expect(b.lock(ownB).status == 0)

        // A writes on in A's storage.
        try #require(a.mount(vaultA, pattern: Self.patternA).status == 0)
        a.sh("echo later > later && cat hello", in: vaultA)
        #expect(a.lock(vaultA).status == 0)

        // C, with A's storage: no vault shared, whether C's vault is new or has a code, and
        // nothing written; the same line B gets for a code that shared nothing with B.
        Self.bring(a, into: c)
        let vaultC = try c.mountPoint()
        let before = try c.storageSnapshot()
        let none = Self.refusal(c.mount(vaultC, pattern: Self.patternC, options: ["--shared", codeA]))
        #expect(none.contains("no vault shared by that contact code"), "\(none)")
        #expect(try c.storageSnapshot() == before)
        try #require(c.mount(vaultC, pattern: Self.patternC).status == 0)
        let codeC = try Self.contact(c, vaultC).code
        #expect(c.lock(vaultC).status == 0)
        let afterContact = try c.storageSnapshot()
        #expect(Self.refusal(c.mount(vaultC, pattern: Self.patternC, options: ["--shared", codeA])) == none)
        #expect(try c.storageSnapshot() == afterContact)
        #expect(Self.refusal(b.mount(sharedB, pattern: Self.patternB, options: ["--shared", codeC])) == none)
        let fsckC = c.dotsafe(["fsck", c.storage, "--pattern", Self.patternC, "--shared", codeA])
        #expect(Self.refusal(fsckC) == none)

        // A grant changed in B's copy: refused in one line, nothing written.
        let grant = try #require(FileHandle(forUpdatingAtPath: b.storage + "/" + grants.first!))
        try grant.seek(toOffset: 100)
        let byte = try #require(try grant.read(upToCount: 1))
        try grant.seek(toOffset: 100)
        try grant.write(contentsOf: Data([byte[0] ^ 0x01]))
        try grant.close()
        let tampered = try b.storageSnapshot()
        #expect(Self.refusal(b.mount(sharedB, pattern: Self.patternB, options: ["--shared", codeA])).contains("the grant does not open"))
        #expect(try b.storageSnapshot() == tampered)
    }
}
