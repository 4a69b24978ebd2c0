import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore
@testable import VaultSync

/// A grant comes down over the file at its number's name (FORMAT.md §14.9), a name a join does
/// not compare (`grantPlaces`), so it must never be a file that another state in the storage
/// reads. The second device's state read z.bin; the first device (device 0) deleted it, synced
/// until its files were free, then shared until a grant took a number the second's state reads,
/// withdrew one grant (§14.8: a new RL) and changed the pattern. The new pattern synced into the
/// second's storage is a join over the old state (§13.12; a killed sync of the second placed
/// the files the remote root references). Whatever it does, that file keeps its bytes and the
/// old pattern reads its state as before. Today the join stops before its grants come, refused
/// as a storage under another pattern by a file it compares that differs. ADVERSARIES.md: the
/// user who moves on to the new pattern where the old state still holds what it alone has.
/// Real vaults on disk, a real rclone, a local remote.
@Suite(.serialized) struct GrantPlaceOtherStateTests {
    @Test func aJoinsGrantLeavesTheFileTheOldStateReadsAtItsNumber() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let (first, second) = try VaultSyncTests.twoDevices(remote)
        defer { first.finish(); second.finish() }
        try first.sync(remote)  // the first device learns of the second
        try PatternFollowRefusalTests.writeInOneCommit(first, "z.bin", chunks: 8)
        let zFile = try #require(try KeptOverDeleteSyncTests.chunkFiles(first, "z.bin").values.min())
        try first.sync(remote)
        try second.sync(remote)
        let zBytes = try KeptOverDeleteSyncTests.contents(second, "z.bin")
        try first.vault.remove(Array("z.bin".utf8), from: Vault.rootID)
        try first.vault.commit()
        try first.sync(remote)
        try first.sync(remote)  // reads its root back: z's files are no longer pinned
        // The second's sync brings the first's files, killed before its commit: its state still
        // reads z, and every file the remote root references is here with the remote's bytes.
        try PatternFollowRefusalTests.killBeforeCommit(second, remote) { try !ReplacedIndexPageTests.references($0, zFile) }
        let read = second.vault.state.withLock { Set($0.referencedFiles().map(\.file)) }
        try #require(read.contains(zFile), "the second's state reads z")

        // Shares (no page written) take the lowest free numbers until one is a file the second reads.
        var codes: [ContactCode] = [], grant: UInt64?
        for seed in UInt8(0xC0)..<0xD0 where grant == nil {
            let contact = try SyncDevice("contact-\(seed)", seed: seed)
            defer { contact.finish() }
            codes.append(try contact.vault.contactCode().code)
            try first.vault.share(with: codes.last!)
            try first.reopen()
            let grants = first.vault.state.withLock { $0.committer.formatTwo?.specialFiles.filter(\.isGrantFile).map(\.file.raw) ?? [] }
            grant = grants.first(where: read.contains)
        }
        let shared = try #require(grant, "no grant took a number the second reads")
        try first.sync(remote)
        try first.vault.unshare(with: codes.last!)
        try first.reopen()
        try first.sync(remote)
        try first.changePattern(to: 8)
        try first.sync(remote)
        let place = try second.vault.state.withLock { try $0.name(shared) }
        let tree = try second.tree()
        let before = try SharedSyncTests.files(second.folder)

        try second.usePattern(8)
        do {
            try second.sync(remote)
            #expect(try second.tree() == first.tree(), "the join brings the vault")
            #expect(try second.vault.check().isClean)
        } catch SyncRefusal.heldUnderOtherPattern {
            #expect(try SharedSyncTests.files(second.folder) == before, "a refused join changes no file")
        }
        #expect(try SharedSyncTests.files(second.folder)[place] == before[place], "the file at the grant's number is as it was")
        #expect(try PatternFollowTests.view(second.folder, seed: SyncDevice.seed) == tree, "the old pattern opens its state")
        let old = try Vault.open(storage: try Storage.open(at: second.folder), secrets: try SyncDevice.secrets(SyncDevice.seed),
                                 options: Vault.Options(readOnly: true, cacheBytes: 8 << 20))
        defer { try? old.lock() }
        let zID = try old.lookup(Vault.rootID, Array("z.bin".utf8))
        #expect(try old.read(zID, offset: 0, count: zBytes.count) == zBytes, "z reads as before with the old pattern")
    }
}
