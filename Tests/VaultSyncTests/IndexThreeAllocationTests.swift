import DotSafeTestSupport
import Foundation
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore
@testable import VaultSync

/// Index 3's open takes its free files from the file blocks and its packs from the pack
/// entries and member lists, and reads no sync-base piece (docs/FORMAT.md §15.4, issue 17 step
/// 4); the pins, which the blocks hold, are read when a commit or a placement needs them. The
/// oracle is fsck's open, which takes both from the references and reads the base at once.
@Suite(.serialized) struct IndexThreeAllocationTests {
    /// What an open knows of free files and packs, before anything changes.
    struct Allocation: Equatable, CustomStringConvertible {
        var free: [UInt64]
        var pinned: Set<UInt64>
        var packs: [UInt64: [Int]]
        var members: [UInt64: Set<UInt64>]
        var description: String { "free \(free.count) \(free.prefix(8))…, pinned \(pinned.sorted()), packs \(packs)" }
    }

    /// The storage opened as a mount opens it (`references: false`) or as fsck does.
    static func allocation(_ device: SyncDevice, references: Bool) throws -> (Allocation, pinsUnread: Bool) {
        var options = Vault.Options(cacheBytes: 8 << 20)
        options.indexThree = true
        options.defersIndexChecks = references
        let vault = try Vault.open(storage: try Storage.open(at: device.folder), secrets: SyncDevice.secrets(SyncDevice.seed), options: options)
        defer { try? vault.lock() }
        return try vault.state.withLock { state in
            let unread = state.syncBases.pinsUnread
            try state.readPinsIfUnread()
            let packs = state.packs.packs
            return (Allocation(free: state.writer.allocator.freeNumbers, pinned: state.writer.allocator.pinnedNumbers,
                               packs: packs.mapValues { [$0.liveBytes, $0.reservedEnd] }, members: packs.mapValues(\.members)), unread)
        }
    }

    /// The two opens agree; the mount's left the pins unread when the vault has a sync base.
    static func expectSameAllocation(_ device: SyncDevice, synced: Bool, _ context: String) throws {
        try device.vault.lock()
        let (fromRecords, unread) = try allocation(device, references: false)
        let (fromReferences, _) = try allocation(device, references: true)
        #expect(fromRecords == fromReferences, "\(context): from the records \(fromRecords); from the references \(fromReferences)")
        #expect(unread == synced, "\(context): the open left the pins unread: \(unread)")
        try device.reopen()
    }

    @Test func theOpenTakesFreeFilesAndPacksFromTheRecords() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-alloc", indexThree: true)
        defer { a.finish() }
        var generator = TreeMergePropertyTests.Generator(state: 17)
        var names: [String] = []
        var synced = false
        for round in 0..<8 {
            for step in 0..<6 {
                switch Int.random(in: 0..<5, using: &generator) {
                case 0...2:
                    let name = "f\(round)-\(step)"
                    // Mostly pack members; now and then a chunked file.
                    let size = Int.random(in: 0..<6, using: &generator) == 0 ? 300_000 : Int.random(in: 1..<9_000, using: &generator)
                    try a.write(name, String(repeating: "x", count: size))
                    names.append(name)
                case 3 where !names.isEmpty:
                    let name = names.remove(at: Int.random(in: 0..<names.count, using: &generator))
                    try a.vault.remove(Array(name.utf8), from: Vault.rootID)
                    try a.vault.commit()
                case 4 where !names.isEmpty:
                    let name = names[Int.random(in: 0..<names.count, using: &generator)]
                    try a.write(name, bytes: Array("changed".utf8), at: 10)
                default: continue
                }
            }
            if round % 3 == 1 {
                try a.sync(remote)
                synced = true
            }
            try Self.expectSameAllocation(a, synced: synced, "round \(round)")
        }
        #expect(synced)
        try IndexThreeSync.expectExact(a, "the end")
    }

    /// The names of the pieces of the committed root's sync base, in `device`'s storage.
    static func pieceNames(_ device: SyncDevice) throws -> [String] {
        try device.vault.state.withLock { state in
            let value = try #require(state.committer.formatTwo?.extensions.first { $0.tag == SyncBase.extensionTag }?.value)
            let header = try SyncBase.Header.decode(value)
            defer { for piece in header.pieces { piece.key.wipeStorage() } }
            return try header.pieces.map { try state.name($0.file.raw) }
        }
    }

    /// The file blocks follow the changed items on a synced vault too: the first commit of an
    /// open, whose pins were read late, looks at every item (as a sync's commit, whose pins
    /// change); the commits after, at the items they changed; the records exact throughout.
    @Test func aSyncedVaultsCommitsFollowTheChangedItems() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-files", indexThree: true)
        defer { a.finish() }
        try a.makeFolder("docs")
        for i in 0..<30 { try a.write("docs/f\(i)", "small \(i)") }
        try a.write("big", String(repeating: "b", count: 600_000))
        try a.sync(remote)
        func items(_ change: () throws -> Void) rethrows -> Int {
            let before = a.vault.statistics.fileRecordItems
            try change()
            return a.vault.statistics.fileRecordItems - before
        }
        // A sync leaves the device reopened: its first commit reads the pins and derives the blocks.
        let counts = try [items { try a.write("docs/f1", "changed once") }, items { try a.write("docs/f1", "changed twice") }]
        #expect(counts[0] >= 32 && counts[1] == 1, "commits after the sync: \(counts)")
        try IndexThreeSync.expectExact(a, "commits after the sync")
        try a.reopen()
        let reopened = try [items { try a.write("docs/f2", "changed twice") }, items { try a.write("big", bytes: [1, 2], at: 300_000) }]
        #expect(reopened[0] >= 32 && reopened[1] == 1, "commits after a reopen: \(reopened)")
        try IndexThreeSync.expectExact(a, "after the reopen")
        try a.sync(remote)
        let after = try [items { try a.write("docs/f3", "changed once") }, items { try a.write("docs/f3", "changed thrice") }]
        #expect(after[0] >= 32 && after[1] == 1, "commits after the second sync: \(after)")
        try IndexThreeSync.expectExact(a, "after the second sync")
        try a.reopen()
        #expect(try a.read("docs/f3") == "changed thrice" && a.read("docs/f2") == "changed twice")
    }

    /// The pieces gone from the storage: the vault opens and reads; the first commit that writes
    /// says which piece is missing and writes nothing; with the pieces back it commits.
    @Test func theOpenReadsNoSyncBasePiece() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-nobase", indexThree: true)
        defer { a.finish() }
        try a.makeFolder("docs")
        try a.write("docs/a.txt", "packed")
        try a.write("big", String(repeating: "b", count: 600_000))
        try a.sync(remote)
        let tree = try a.tree()
        let pieces = try Self.pieceNames(a)
        try #require(!pieces.isEmpty)
        try a.vault.lock()
        var saved: [String: Data] = [:]
        for name in pieces {
            saved[name] = try #require(FileManager.default.contents(atPath: a.folder + "/" + name))
            try FileManager.default.removeItem(atPath: a.folder + "/" + name)
        }

        try a.reopen()
        #expect(try a.tree() == tree, "every file reads without the base")
        let before = try SharedSyncTests.files(a.folder)
        do {
            try a.write("docs/new.txt", "written")
            Issue.record("a commit without the base's pieces")
        } catch {
            #expect("\(error)".contains("the sync base's piece") && "\(error)".contains("is missing"), "\(error)")
        }
        #expect(try SharedSyncTests.files(a.folder) == before, "the failed commit wrote nothing")
        // The lock's own commit fails the same way; the keys go all the same.
        #expect(throws: (any Error).self) { try a.vault.lock() }

        for (name, bytes) in saved { try bytes.write(to: URL(fileURLWithPath: a.folder + "/" + name)) }
        try a.reopen()
        try a.write("docs/new.txt", "written")
        #expect(try a.read("docs/new.txt") == "written")
        try IndexThreeSync.expectExact(a, "with the pieces back")
    }

    /// A file the remote root references, removed before the pins are read: the commit reads
    /// them and keeps the file's numbers (its chunks there, unchanged) until the sync after the
    /// one that publishes a root without them; where they are at each step, `followRemovedFiles`.
    @Test func aPinnedFileRemovedBeforeThePinsAreReadStaysUntilTheNextSync() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-pinned", indexThree: true)
        defer { a.finish() }
        try a.write("keep", "kept")
        try a.write("big", String(repeating: "b", count: 600_000))
        try a.sync(remote)
        let big = try a.id("big")
        let chunks = Set(try a.vault.state.withLock { state in try state.tree.item(big).fileNumbers })
        let names = try chunks.map { number in try a.vault.state.withLock { try $0.name(number) } }
        let bytes = try names.map { try #require(FileManager.default.contents(atPath: a.folder + "/" + $0)) }
        #expect(a.vault.state.withLock { $0.syncBases.pinsUnread }, "reopened after the sync: pins unread")

        try a.vault.remove(Array("big".utf8), from: Vault.rootID)
        #expect(a.vault.state.withLock { $0.syncBases.pinsUnread }, "a remove reads no pin")
        try a.vault.commit()
        try a.vault.state.withLock { state in
            #expect(!state.syncBases.pinsUnread)
            #expect(chunks.isSubset(of: state.writer.allocator.pinnedNumbers), "the big file's chunks are pinned")
            #expect(Set(state.writer.allocator.freeNumbers).isDisjoint(with: chunks), "and not free")
        }
        try a.write("other", String(repeating: "o", count: 700_000))
        try a.reopen()
        for (name, old) in zip(names, bytes) {
            #expect(FileManager.default.contents(atPath: a.folder + "/" + name) == old, "pinned chunk \(name) unchanged")
        }
        try Self.expectSameAllocation(a, synced: true, "after the remove")
        #expect(Self.places(a, chunks) == ["held"], "reopened: kept out of the free files by the file blocks, the pins unread")
        try Self.followRemovedFiles(a, remote, chunks)
    }

    /// The same in index 2, for comparison: its open reads the pins with the rest.
    @Test func aPinnedFileRemovedInIndexTwoStaysUntilTheNextSync() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i2-pinned")
        defer { a.finish() }
        try a.write("keep", "kept")
        try a.write("big", String(repeating: "b", count: 600_000))
        try a.sync(remote)
        let big = try a.id("big")
        let chunks = Set(try a.vault.state.withLock { state in try state.tree.item(big).fileNumbers })
        try a.vault.remove(Array("big".utf8), from: Vault.rootID)
        try a.vault.commit()
        try a.write("other", String(repeating: "o", count: 700_000))
        try a.reopen()
        #expect(Self.places(a, chunks) == ["pinned"], "the open read the pins")
        try Self.followRemovedFiles(a, remote, chunks)
    }

    /// Where each of `numbers` is in `device`'s allocator: free, pinned, released (freed since
    /// the last commit, which still counts them: free from the next), referenced by the state,
    /// or held: none of these, as an open of index 3 keeps them before it reads the pins (the
    /// file blocks count them used, §15.4).
    static func places(_ device: SyncDevice, _ numbers: Set<UInt64>) -> Set<String> {
        device.vault.state.withLock { state in
            let allocator = state.writer.allocator, free = Set(allocator.freeNumbers)
            let referenced = Set(state.referencedFiles().map(\.file))
            return Set(numbers.map { number in
                free.contains(number) ? "free" : allocator.pinnedNumbers.contains(number) ? "pinned"
                    : allocator.releasedNumbers.contains(number) ? "released" : referenced.contains(number) ? "referenced" : "held"
            })
        }
    }

    /// `numbers`, the own files of a file removed since the last sync, which its root
    /// references, through the syncs that follow (docs/SYNC-DESIGN.md §3.2): pinned while a
    /// remote root this device read or wrote references them (the one the next sync reads may
    /// be raced, §3.4 step 7), released by the commit of the sync after, and free from the
    /// commit after that, or at a reopen: never lost. fsck and index 3's records agree at each.
    static func followRemovedFiles(_ device: SyncDevice, _ remote: TestRemote, _ numbers: Set<UInt64>) throws {
        func sync() throws { try device.syncKeepingOpen(remote) }
        func expectSound(_ context: String) throws {
            if device.indexThree { try IndexThreeSync.expectExact(device, context) }
            let report = try device.vault.check()
            #expect(report.isClean, "\(context): \(report.storageProblems) \(report.damagedItems)")
        }
        try sync()
        #expect(places(device, numbers) == ["pinned"], "after the sync that published a root without them: the root it read has them")
        try expectSound("after the first sync")
        try device.reopen()
        let unread = device.vault.state.withLock { $0.syncBases.pinsUnread }
        #expect(unread == device.indexThree, "only index 3's open leaves the pins unread")
        #expect(places(device, numbers) == [unread ? "held" : "pinned"], "after a reopen")
        try device.makeFolder("after-removal")
        #expect(places(device, numbers) == ["pinned"], "after a commit")
        try expectSound("after the reopen")
        try sync()
        #expect(places(device, numbers) == ["released"], "after the next sync's commit, which confirmed a root without them")
        try device.makeFolder("after-release")
        let afterCommit = places(device, numbers)
        #expect(afterCommit.isSubset(of: ["free", "referenced"]) && afterCommit.contains("free"), "after the next commit: \(afterCommit)")
        try expectSound("after the commit after the second sync")
        try device.reopen()
        #expect(places(device, numbers) == afterCommit, "after a reopen")
    }

    /// A pack whose last member went after the sync reopens with its end below what the remote
    /// root uses of it. A member placed before any commit (a dirty chunk the cache sends out)
    /// reads the pins first, so it goes into no pinned pack, whose bytes stay as they are.
    @Test func aMemberPlacedBeforeThePinsAreReadGoesIntoNoPinnedPack() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-pinned-pack", indexThree: true)
        defer { a.finish() }
        try a.write("first", "the first member")
        try a.write("last", "the last member of the pack")
        func packed(_ path: String) throws -> ItemRecord.Member? {
            let id = try a.id(path)
            return try a.vault.state.withLock { try $0.tree.item(id).packedMember }
        }
        let firstPack = try #require(try packed("first")).fileNumber
        let member = try #require(try packed("last"))
        try #require(member.fileNumber == firstPack, "both in one pack")
        try a.sync(remote)
        try a.vault.remove(Array("last".utf8), from: Vault.rootID)
        try a.vault.commit()
        try a.reopen()
        let pack = member.fileNumber, packName = try a.vault.state.withLock { try $0.name(pack) }
        let bytes = try #require(FileManager.default.contents(atPath: a.folder + "/" + packName))
        #expect(a.vault.state.withLock { $0.syncBases.pinsUnread })

        let new = try a.vault.create(.file, in: Vault.rootID, named: Array("new".utf8), mode: 0o644)
        try a.vault.write(new, offset: 0, bytes: Array("a member of the same size as the last".utf8))
        try a.vault.state.withLock { state in
            try state.flushChunk(ChunkCache.Key(item: new, index: 0))
            #expect(!state.syncBases.pinsUnread, "the placement read the pins")
            #expect(try state.tree.item(new).packedMember?.fileNumber != pack, "not in the pinned pack")
        }
        try a.vault.commit()
        try a.reopen()
        #expect(FileManager.default.contents(atPath: a.folder + "/" + packName) == bytes, "the pinned pack unchanged")
        #expect(try a.read("new") == "a member of the same size as the last")
        try Self.expectSameAllocation(a, synced: true, "after the placement")
    }

    /// The same for compaction, which places members at a commit that changed only names: the
    /// commit reads the pins before it compacts, so a sparse pack's member goes into no pinned
    /// pack whose end came down after the sync (here it waits: no other pack has room).
    @Test func compactionBeforeThePinsAreReadMovesNothingIntoAPinnedPack() throws {
        let remote = try TestRemote(.local)
        defer { remote.finish() }
        let a = try SyncDevice("i3-pinned-compaction", indexThree: true)
        defer { a.finish() }
        func pack(_ path: String) throws -> UInt64? {
            let id = try a.id(path)
            return try a.vault.state.withLock { try $0.tree.item(id).packedMember?.fileNumber }
        }
        let sparse = (1...6).map { "a\($0)" }
        for name in sparse { try a.write(name, String(repeating: name, count: 20_000)) }
        try a.write("b1", String(repeating: "b", count: 190_000))
        try a.write("b2", "the last member of its pack")
        let packA = try #require(try pack("a1")), packB = try #require(try pack("b1"))
        try #require(try sparse.allSatisfy { try pack($0) == packA } && pack("b2") == packB && packA != packB)
        try a.sync(remote)
        try a.vault.remove(Array("b2".utf8), from: Vault.rootID)
        try a.vault.commit()
        try a.reopen()
        let nameB = try a.vault.state.withLock { try $0.name(packB) }
        let bytesB = try #require(FileManager.default.contents(atPath: a.folder + "/" + nameB))

        #expect(a.vault.state.withLock { $0.syncBases.pinsUnread })
        for name in sparse.dropLast() { try a.vault.remove(Array(name.utf8), from: Vault.rootID) }
        try a.vault.commit()
        #expect(try pack("a6") != packB, "not moved into the pinned pack")
        try a.reopen()
        #expect(FileManager.default.contents(atPath: a.folder + "/" + nameB) == bytesB, "the pinned pack unchanged")
        #expect(try a.read("a6") == String(repeating: "a6", count: 20_000))
        #expect(try a.read("b1") == String(repeating: "b", count: 190_000))
        try Self.expectSameAllocation(a, synced: true, "after the compaction")
    }
}
