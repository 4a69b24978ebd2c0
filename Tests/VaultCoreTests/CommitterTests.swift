import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// The committer alone: how changed records become pages, how pages split, the root at the
/// commit point, and when covers are due.
@Suite struct CommitterTests {
    static let now: Int64 = 1_700_000_000_000_000_000

    /// A tree of the root folder and `files` files, all changed.
    static func tree(files: Int) throws -> ItemTree {
        var tree = ItemTree(root: ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: now, mtime: now, ctime: now))
        let arena = SecretArena()
        for n in 0..<files {
            _ = try tree.create(.file, in: Format.rootItemID, named: Array("f\(n)".utf8), mode: 0o644, uid: 0, gid: 0, rdev: 0,
                                target: [], now: now, makeKey: { try arena.allocateRandom() })
        }
        return tree
    }

    @Test func changedRecordsArePagedInKeyOrderAndSplitWhenFull() throws {
        var (writer, storage) = try FileWriterTests.writer()
        var committer = try Committer(vaultKey: try SecretBytes.random(count: Format.keySize), generation: 0)
        var tree = try Self.tree(files: 11)
        committer.markChangedRecords(&tree)
        #expect(committer.hasChanges)
        // Records of 50,000 bytes: five fit a page body (P − 4 bytes), the sixth starts the next.
        let written = try committer.writeDirtyPages(writer: &writer, arena: SecretArena(), fanOut: .standard) { _ in [UInt8](repeating: 7, count: 50_000) }
        #expect(written == 3)
        let pages = committer.pageTable.pages
        #expect(pages.map(\.keys.count) == [5, 5, 2])
        #expect(pages.flatMap(\.keys) == (1...12).map { RecordKey.item(UInt64($0)) })
        #expect(!committer.hasChanges)
        for page in pages {
            let ref = try #require(page.ref)
            let file = try #require(try storage.read(try writer.name(ref.fileNumber)))
            let body = try Sealer.openEnvelope(file, expectedNonce: ref.nonce, kind: .indexPage, key: .secret(committer.pageKey),
                                               seal: .indexPage)
            #expect(try IndexPage.decode(body[...]).map(\.key) == page.keys)
        }
    }

    @Test func theRootGoesIntoTheOtherSlotAndOpensWithTheIndexKey() throws {
        var (writer, storage) = try FileWriterTests.writer()
        var committer = try Committer(vaultKey: try SecretBytes.random(count: Format.keySize), generation: 0)
        var tree = try Self.tree(files: 2)
        committer.markChangedRecords(&tree)
        _ = try committer.writeDirtyPages(writer: &writer, arena: SecretArena(), fanOut: .standard) { _ in [1, 2, 3] }
        try committer.writeRoot(releasing: [], nextItemID: tree.nextItemID, writer: &writer, arena: SecretArena(), coversRefreshed: false)
        #expect(committer.generation == 1 && committer.committedSinceCoverRefresh)
        #expect(try !storage.entryExists(try writer.name(0)), "slot 0 is made only after the first root")
        try committer.writeOtherSlot(writer: &writer)
        #expect(try storage.entryExists(try writer.name(0)))
        let file = try #require(try storage.read(try writer.name(1)))
        let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, key: .secret(writer.secrets.indexKey),
                                           seal: .indexRoot(slot: 1))
        let root = try IndexRoot.decode(body[...])
        #expect(root.generation == 1 && root.nextItemID == 4 && root.pages.count == 1)
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, key: .secret(writer.secrets.indexKey),
                                    seal: .indexRoot(slot: 0))
        }
    }

    @Test func coversAreDueOnceAnIntervalHasPassed() throws {
        var committer = try Committer(vaultKey: try SecretBytes.random(count: Format.keySize), generation: 0)
        #expect(committer.coversAreDue(now: Self.now), "never refreshed in this session")
        committer.coversAreNew(now: Self.now)
        #expect(!committer.coversAreDue(now: Self.now + Committer.coverRefreshInterval - 1))
        #expect(committer.coversAreDue(now: Self.now + Committer.coverRefreshInterval))
    }
}
