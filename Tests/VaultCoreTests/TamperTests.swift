import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// R-BLK-2: a block that was altered, moved, swapped, truncated, rolled back or removed fails to
/// open; the read of that item returns `damagedData` (EIO), never other bytes, and every other
/// item stays readable.
@Suite struct TamperTests {
    static let payload = Format.payloadSize

    /// A vault with two packed and two chunked items, and the storage files each one lives in,
    /// found by diffing the storage around the commit that wrote it.
    struct Fixture {
        let storage: SimulatedStorageFolder
        let numbers: FileNumbers
        var contents: [String: [UInt8]] = [:]
        /// File names of the chunks of `big` (3 chunks) and `other` (2 chunks), in chunk order.
        var bigChunks: [String] = []
        var otherChunks: [String] = []
        /// The pack holding `small` and `small2`, and where `small`'s sealed member lies in it.
        var pack = ""
        var smallMember = 0..<0

        init() throws {
            storage = try TestVaults.storage()
            numbers = try FileNumbers(storage)
            let vault = try TestVaults.open(storage)
            // Counted writes: no refill (format 2 refills the page a commit replaces at that commit).
            vault.state.withLock { $0.writer.refillsFreedFiles = false }
            try write(vault, "small2", TestVaults.content(700, seed: 1))
            try vault.commit()

            var before = storage.snapshot
            try write(vault, "small", TestVaults.content(1000, seed: 2))
            try vault.commit()
            var after = storage.snapshot
            // The existing pack gets the new member in its free tail: only that range changes. A
            // member is N || ciphertext || tag (docs/FORMAT.md §13.8).
            let overhead = Format.sealNonceSize + Format.tagSize
            let partial = numbers.dataFiles(SnapshotDiff(before, after).changed).filter {
                differingRange(before[$0]!, after[$0]!)!.count <= 1000 + overhead
            }
            pack = try #require(partial.first, "no pack changed in part")
            #expect(partial.count == 1)
            // small2's member fills the new pack from 0; small's follows it.
            smallMember = try memberRange(changed: differingRange(before[pack]!, after[pack]!)!,
                                          length: 1000 + overhead, start: 700 + overhead)

            before = after
            try write(vault, "big", TestVaults.content(2 * payload + 1000, seed: 3))
            try vault.commit()
            after = storage.snapshot
            var written = numbers.dataFiles(SnapshotDiff(before, after).written)
            // Three chunks and the index page, or (when group 0 ran out) a new group whose files
            // no chunk took hold random bytes (§3.3); which file holds which chunk is the index's.
            try #require(written.count == 4 || written.count >= 16, "files written for big: \(written.count)")
            bigChunks = try Self.chunkFiles(vault, "big")

            before = after
            try write(vault, "other", TestVaults.content(payload + 10, seed: 4))
            try vault.commit()
            written = numbers.dataFiles(SnapshotDiff(before, storage.snapshot).written)
            try #require(written.count == 3 || written.count >= 16, "files written for other: \(written.count)")
            otherChunks = try Self.chunkFiles(vault, "other")
            try vault.lock()
            try checkStorageInvariants(storage)
        }

        /// The files of an item's chunks, in chunk order, as its index entry references them.
        static func chunkFiles(_ vault: Vault, _ name: String) throws -> [String] {
            let id = try vault.id(at: name)
            return try vault.state.withLock { state in
                try state.tree.items[id]!.chunks.sorted { $0.key < $1.key }.map { try state.writer.name($0.value.fileNumber) }
            }
        }

        private mutating func write(_ vault: Vault, _ name: String, _ bytes: [UInt8]) throws {
            contents[name] = bytes
            try vault.makeFile(name, bytes)
        }

        /// Counted writes (a rollback's diff): no refill (format 2 refills at the commit that frees).
        func open() throws -> Vault {
            let vault = try TestVaults.open(storage)
            vault.state.withLock { $0.writer.refillsFreedFiles = false }
            return vault
        }

        /// An open vault that has made its first commit of the session (which refreshes the
        /// covers), so that the diff of its next commit shows only the files that change wrote.
        func openWarm() throws -> Vault {
            let vault = try open()
            try vault.setAttributes(Vault.rootID, mtime: 1)
            try vault.commit()
            return vault
        }

        /// Every item but `damaged` reads back exactly; each damaged one fails as a whole.
        func expectOnlyDamaged(_ damaged: Set<String>, in vault: Vault, sourceLocation: SourceLocation = #_sourceLocation) throws {
            for (name, content) in contents.sorted(by: { $0.key < $1.key }) {
                if damaged.contains(name) {
                    expectDamagedData("item \(name)", sourceLocation: sourceLocation) { _ = try vault.readAll(name) }
                } else {
                    expectSame(try vault.readAll(name), content, "item \(name)", sourceLocation: sourceLocation)
                }
            }
        }
    }

    enum Tamper: String, CaseIterable, Sendable {
        case bitFlipInChunkBody, bitFlipInChunkNonce, bitFlipInChunkTag, bitFlipInMember
        case reorderChunksOfOneItem, swapChunksBetweenItems, memberOfAnotherItem
        case truncateChunk, extendChunk, zeroFillChunk, zeroFillPack, truncatePack, deletePack, deleteChunk
        case rollbackChunk, rollbackMember
    }

    @Test(arguments: Tamper.allCases)
    func tamperedBlockFailsAndNothingElseDoes(_ tamper: Tamper) throws {
        var fixture = try Fixture()
        let storage = fixture.storage
        var damaged: Set<String> = ["big"]
        /// The chunk of `big` that no longer opens; the others must still read.
        var damagedChunks: Set<Int> = [1]
        switch tamper {
        case .bitFlipInChunkBody:
            storage.flipBit(fixture.bigChunks[1], at: Format.fileSize / 2)
        case .bitFlipInChunkNonce:
            storage.flipBit(fixture.bigChunks[1], at: 3)
        case .bitFlipInChunkTag:
            storage.flipBit(fixture.bigChunks[1], at: Format.fileSize - 1)
        case .bitFlipInMember:
            storage.flipBit(fixture.pack, at: fixture.smallMember.lowerBound + 500)
            damaged = ["small"]
        case .reorderChunksOfOneItem:
            let a = storage.bytes(fixture.bigChunks[0]), b = storage.bytes(fixture.bigChunks[1])
            storage.tamper(fixture.bigChunks[0], with: b)
            storage.tamper(fixture.bigChunks[1], with: a)
            damagedChunks = [0, 1]
        case .swapChunksBetweenItems:
            let a = storage.bytes(fixture.bigChunks[1]), b = storage.bytes(fixture.otherChunks[1])
            storage.tamper(fixture.bigChunks[1], with: b)
            storage.tamper(fixture.otherChunks[1], with: a)
            damaged = ["big", "other"]
        case .memberOfAnotherItem:
            // small2's member (sealed under its own key and ID) put where small's is.
            var pack = storage.bytes(fixture.pack)
            let small2 = Array(pack[0..<fixture.smallMember.count])
            pack.replaceSubrange(fixture.smallMember, with: small2)
            storage.tamper(fixture.pack, with: pack)
            damaged = ["small"]
        case .truncateChunk:
            storage.tamper(fixture.bigChunks[1], with: Array(storage.bytes(fixture.bigChunks[1]).dropLast(1)))
        case .extendChunk:
            storage.tamper(fixture.bigChunks[1], with: storage.bytes(fixture.bigChunks[1]) + [0])
        case .zeroFillChunk:
            storage.tamper(fixture.bigChunks[1], with: [UInt8](repeating: 0, count: Format.fileSize))
        case .zeroFillPack:
            storage.tamper(fixture.pack, with: [UInt8](repeating: 0, count: Format.fileSize))
            damaged = ["small", "small2"]
        case .truncatePack:
            storage.tamper(fixture.pack, with: Array(storage.bytes(fixture.pack).prefix(fixture.smallMember.upperBound)))
            damaged = ["small", "small2"]
        case .deletePack:
            storage.tamper(fixture.pack, with: nil)
            damaged = ["small", "small2"]
        case .deleteChunk:
            storage.tamper(fixture.bigChunks[1], with: nil)
        case .rollbackChunk:
            // Chunk 1 is rewritten into another file; its older version is put in that file's place.
            let old = storage.bytes(fixture.bigChunks[1])
            let vault = try fixture.openWarm()
            let before = storage.snapshot
            let change = TestVaults.content(100, seed: 9)
            try vault.write(try vault.id(at: "big"), offset: UInt64(Self.payload), bytes: change)
            try vault.commit()
            fixture.contents["big"]!.replaceSubrange(Self.payload..<Self.payload + 100, with: change)
            let written = fixture.numbers.dataFiles(SnapshotDiff(before, storage.snapshot).written)
            try #require(written.count == 2 || written.count >= 16, "a chunk and a page (and maybe a new group)")
            fixture.bigChunks[1] = try Fixture.chunkFiles(vault, "big")[1]
            #expect(written.contains(fixture.bigChunks[1]), "chunk 1 was rewritten into another file")
            try vault.lock()
            storage.tamper(fixture.bigChunks[1], with: old)
        case .rollbackMember:
            // small gets new content of the same size: a new member in the pack's tail, with a new
            // nonce; the old member's bytes are put where the new one is.
            let vault = try fixture.openWarm()
            let old = Array(storage.bytes(fixture.pack)[fixture.smallMember])
            let before = storage.snapshot
            let change = TestVaults.content(1000, seed: 10)
            try vault.write(try vault.id(at: "small"), offset: 0, bytes: change)
            try vault.commit()
            fixture.contents["small"] = change
            let range = try memberRange(changed: try #require(differingRange(before[fixture.pack]!, storage.bytes(fixture.pack))),
                                        length: old.count, start: fixture.smallMember.upperBound)
            try vault.lock()
            var pack = storage.bytes(fixture.pack)
            pack.replaceSubrange(range, with: old)
            storage.tamper(fixture.pack, with: pack)
            damaged = ["small"]
        }
        let tampered = storage.snapshot

        let vault = try fixture.open()
        try fixture.expectOnlyDamaged(damaged, in: vault)
        if damaged == ["big"] {
            // EIO for the damaged range only (R-BLK-2, "Bad input"): the other chunks still read.
            let big = try vault.id(at: "big")
            for chunk in 0..<3 {
                let range = chunk * Self.payload..<min((chunk + 1) * Self.payload, fixture.contents["big"]!.count)
                if damagedChunks.contains(chunk) {
                    expectDamagedData("chunk \(chunk)") { _ = try vault.read(big, offset: UInt64(range.lowerBound + 7), count: 10) }
                } else {
                    expectSame(try vault.read(big, offset: UInt64(range.lowerBound), count: range.count),
                               Array(fixture.contents["big"]![range]), "chunk \(chunk)")
                }
            }
        }
        // Asking again gives the same answer: a failure is not cached as content.
        try fixture.expectOnlyDamaged(damaged, in: vault)
        try vault.lock()
        // Reading damaged data wrote nothing, and the vault never "repairs" by overwriting.
        expectUnchanged(storage, since: tampered, "after reading and locking")

        // The rest of the vault stays writable: removing a damaged item (the way to get rid of
        // it) and adding another commits, and the next open sees exactly that.
        let writer = try fixture.open()
        let removed = damaged.sorted()[0]
        try writer.remove(Array(removed.utf8), from: Vault.rootID)
        try writer.makeFile("after", [1, 2, 3])
        try writer.lock()
        fixture.contents[removed] = nil
        fixture.contents["after"] = [1, 2, 3]
        let reader = try fixture.open()
        #expect(throws: VaultError.notFound) { try reader.id(at: removed) }
        try fixture.expectOnlyDamaged(damaged.subtracting([removed]), in: reader)
        try reader.lock()

        // Files the removed item freed (a missing one among them) are written again by later
        // commits: they must still commit.
        let later = try fixture.open()
        try later.makeFile("later", streamContent(12 * Self.payload, seed: 12))
        try later.lock()
        expectSame(try fixture.open().readAll("later"), streamContent(12 * Self.payload, seed: 12), "written after the damage")
    }

    /// A cover that someone removed is the vault's own file: the next cover refresh makes it
    /// again rather than failing every commit from then on.
    @Test func removedCoverDoesNotStopCommits() throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage)
        let vault = try TestVaults.open(storage)
        try vault.makeFile("a", [1])
        try vault.lock()
        storage.tamper(numbers.name(2), with: nil)
        let again = try TestVaults.open(storage)
        try again.makeFile("b", [2])
        try again.lock()
        let last = try TestVaults.open(storage)
        #expect(try last.readAll("b") == [2])
        try last.lock()
        try checkStorageInvariants(storage)
    }

    /// The fixture itself is sound: without tampering every item reads back.
    @Test func untouchedFixtureReadsBack() throws {
        let fixture = try Fixture()
        try fixture.expectOnlyDamaged([], in: try fixture.open())
        try checkStorageInvariants(fixture.storage)
    }
}
