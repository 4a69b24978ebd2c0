import DotSafeTestSupport
import Foundation
import Testing
import VaultCore
import VaultFormat
@testable import VaultSync

/// Sharing over sync (issue 14, FORMAT.md §14.9) with real vaults on disk, a real rclone and a
/// WebDAV server on 127.0.0.1: three people (pattern keys of their own), three storages, one
/// remote. A's grant goes up with A's sync; B's `--shared` sync brings the vault down and joins
/// it as a device; both write; C, with the same remote, finds nothing and learns nothing.
@Suite(.serialized) struct SharedSyncTests {
    /// Every file of a storage or remote by name, with its bytes.
    static func files(_ folder: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            result[name] = FileManager.default.contents(atPath: folder + "/" + name)
        }
        return result
    }

    /// What a refusal of `body` says; the test fails if it succeeds.
    static func refusal(_ body: () throws -> Void) -> String {
        do { try body() } catch { return "\(error)" }
        Issue.record("expected a refusal")
        return ""
    }

    @Test func aSharesWithBBothWriteAndCFindsNothing() throws {
        let remote = try TestRemote(.webdav)
        defer { remote.finish() }
        let served = try #require(remote.servedFolder)
        let a = try SyncDevice("alice", seed: 0xA1), b = try SyncDevice("bob", seed: 0xB2), c = try SyncDevice("carol", seed: 0xC3)
        defer { a.finish(); b.finish(); c.finish() }
        let codeB = try b.vault.contactCode().code, codeC = try c.vault.contactCode().code
        try b.write("own.txt", "bob's own vault")
        try b.reopen()
        try c.reopen()
        try a.makeFolder("docs")
        try a.write("docs/plan.txt", "plan v1")
        try a.write("hello.txt", "hello from alice")
        let codeA = try a.vault.contactCode().code
        try a.sync(remote)

        // C's run with no grant anywhere: the line it gets and what it leaves.
        func carolsSharedSync() throws -> String {
            let shared = try SyncDevice("carol", sharedWith: c, by: codeA)
            defer { try? shared.vault.lock() }
            return Self.refusal { try shared.sync(remote) }
        }
        let storageC = try Self.files(c.folder), remoteBefore = try Self.files(served)
        let noGrantLine = try carolsSharedSync()
        #expect(noGrantLine == SharingError.noGrantOnRemote.description)
        #expect(try Self.files(c.folder) == storageC && Self.files(served) == remoteBefore, "nothing changed here or there")

        // A shares with B: the grant goes up with A's next sync, at its name, and takes its
        // number's place there as in A's storage.
        let namesBefore = a.storageNames
        try a.vault.share(with: codeB)
        let grants = a.storageNames.subtracting(namesBefore)
        try #require(grants.count == 1, "the grant is the one new name: \(grants)")
        let grantName = grants.first!
        try a.reopen()
        try a.sync(remote)
        let remoteFiles = try Self.files(served)
        #expect(remoteFiles[grantName] == (try Self.files(a.folder))[grantName], "the grant's bytes, at the same name")
        Self.checkLikeCovers(remoteFiles, grant: grantName)

        // B: the first sync with --shared brings the vault into B's storage beside B's own.
        let shared = try SyncDevice("bob", sharedWith: b, by: codeA)
        let down = try shared.sync(remote)
        #expect(down.filesDown > 0)
        #expect(try shared.tree() == a.tree())
        #expect(try b.tree() == ["own.txt": "bob's own vault"], "B's own vault is as it was")
        #expect(try Self.files(b.folder).count % Format.groupSize == 0)
        #expect(try Self.files(b.folder)[grantName] == remoteFiles[grantName], "B keeps the grant as its record")
        let report = try shared.vault.check()
        #expect(report.storageProblems.isEmpty && report.damagedItems.isEmpty, "\(report.storageProblems)")

        // Both write; each sees the other's changes after the syncs.
        try shared.write("from-bob.txt", "made by bob")
        try shared.write("hello.txt", "hello edited by bob")
        try a.write("from-alice.txt", "made by alice")
        try a.makeFolder("photos")
        try shared.sync(remote)
        try a.sync(remote)
        try shared.sync(remote)
        let expected = ["docs/": "", "docs/plan.txt": "plan v1", "hello.txt": "hello edited by bob", "from-bob.txt": "made by bob",
                        "from-alice.txt": "made by alice", "photos/": ""]
        #expect(try a.tree() == expected)
        #expect(try shared.tree() == expected)

        // A file both change: both versions stay, the copy named with the device that wrote it.
        try a.write("docs/plan.txt", "alice's plan")
        try shared.write("docs/plan.txt", "bob's plan")
        try a.sync(remote)
        let conflict = try shared.sync(remote)
        #expect(conflict.conflicts == 1)
        try a.sync(remote)
        #expect(try a.tree() == shared.tree())
        let copies = try a.tree().filter { $0.key.hasPrefix("docs/plan.conflict-bob-") && $0.key.hasSuffix(".txt") }
        #expect(copies.values.sorted() == ["bob's plan"])
        #expect(try a.read("docs/plan.txt") == "alice's plan")

        // C again, with the grant to B on the remote: the same line, nothing changed.
        let storageC2 = try Self.files(c.folder), remoteNow = try Self.files(served)
        #expect(try carolsSharedSync() == noGrantLine)
        #expect(try Self.files(c.folder) == storageC2 && Self.files(served) == remoteNow)
        #expect(storageC2 == storageC, "C's storage is as in the run without a grant")

        // Bad inputs: a code of one's own vault, a code that shared nothing with B.
        #expect(Self.refusal { _ = try SyncDevice("bob", sharedWith: b, by: codeB) } == GrantSeal.Failure.ownCode.description)
        let storageB = try Self.files(b.folder)
        let other = try SyncDevice("bob", sharedWith: b, by: codeC)
        #expect(Self.refusal { try other.sync(remote) } == noGrantLine)
        try other.vault.lock()
        #expect(try Self.files(b.folder) == storageB && Self.files(served) == remoteNow)
    }

    /// The remote's files pass the checks covers pass (FORMAT.md §3, §14.3): one size, one name
    /// form, a count in steps of 16, and the grant's bytes as uniform as a cover's.
    static func checkLikeCovers(_ files: [String: Data], grant: String) {
        #expect(files.count % Format.groupSize == 0, "\(files.count) files")
        for (name, data) in files { #expect(data.count == Format.fileSize && FileName.isWellFormed(name), "\(name)") }
        guard let bytes = files[grant].map({ [UInt8]($0) }) else { return }
        #expect(chiSquare(bytes) < 400 && chiSquare(Array(bytes[..<GrantFile.paddingOffset])) < 400)
    }

    /// Pearson's statistic of the byte histogram against uniform (255 degrees of freedom: a
    /// uniform source stays below 400 but with probability about 10^-8).
    static func chiSquare(_ bytes: [UInt8]) -> Double {
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        let expected = Double(bytes.count) / 256
        return counts.reduce(0) { $0 + (Double($1) - expected) * (Double($1) - expected) / expected }
    }
}
