import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// R-VLT-2, docs/FORMAT.md §9.1: what opening does with a damaged index.
@Suite struct IndexDamageTests {
    /// A vault at generation 2 whose generation 1 is still intact in the other slot; the trees
    /// of both generations, and the names of its two slots.
    struct TwoGenerations {
        let storage: SimulatedStorageFolder
        let numbers: FileNumbers
        var first: Tree = [:]
        var second: Tree = [:]
        /// Generation g lives in slot g mod 2.
        var newestSlot: String { numbers.name(0) }
        var olderSlot: String { numbers.name(1) }

        init() throws {
            storage = try TestVaults.storage()
            numbers = try FileNumbers(storage, count: 64)
            // Format 1's fallback to the older slot (format 2 keeps the newest root in both).
            let vault = try TestVaults.open(storage, format: .one)
            // Without the refill, the lock after a commit that freed files writes no second root
            // (§9.2 step 6): generation 1 stays in the other slot, which these tests damage.
            vault.state.withLock { $0.writer.refillsFreedFiles = false }
            try vault.makeFile("a", TestVaults.content(1000, seed: 1))
            try vault.makeFile("big", streamContent(Format.payloadSize + 100, seed: 2))
            try vault.commit()
            first = try vault.tree()
            try vault.write(try vault.id(at: "a"), offset: 10, bytes: [9, 9, 9])
            try vault.write(try vault.id(at: "big"), offset: 5, bytes: [7])
            try vault.makeFile("b", [1])
            try vault.commit()
            second = try vault.tree()
            #expect(vault.generation == 2)
            try vault.lock()
        }
    }

    /// By design (§9.1 step 4): a newest slot that does not open is taken for the remains of a
    /// commit cut short, and the older generation opens. (That generation is only intact until
    /// the next commit reuses the files it alone referenced: the fallback is for torn commits,
    /// not a backup.) The next commit goes into the damaged slot.
    @Test(arguments: [false, true])
    func damagedNewestSlotOpensTheOlderGeneration(zeroFill: Bool) throws {
        let fixture = try TwoGenerations()
        let storage = fixture.storage
        if zeroFill {
            storage.tamper(fixture.newestSlot, with: [UInt8](repeating: 0, count: Format.fileSize))
        } else {
            storage.flipBit(fixture.newestSlot, at: 1000)
        }
        let damaged = storage.snapshot

        let reader = try TestVaults.open(storage, readOnly: true)
        #expect(reader.generation == 1)
        expectSame(try reader.tree(), fixture.first, "generation 1")
        try reader.lock()
        expectUnchanged(storage, since: damaged, "read-only open")

        // Format 1's fallback, kept as format 1 (an upgrade would write its root into both slots).
        let vault = try TestVaults.open(storage, format: .one)
        // Without the refill this lock writes one root, not two (§9.2 step 6).
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        #expect(vault.generation == 1)
        expectSame(try vault.tree(), fixture.first, "generation 1")
        try vault.makeFile("c", [3])
        try vault.lock()
        #expect(storage.bytes(fixture.olderSlot) == damaged[fixture.olderSlot]!, "generation 1 stays where it was")
        let again = try TestVaults.open(storage, format: .one)
        #expect(again.generation == 2)
        var expected = fixture.first
        expected["c"] = .file(mode: 0o644, content: [3])
        expectSame(try again.tree(), expected, "generation 2 made from 1")
        try again.lock()
        try checkStorageInvariants(storage)
    }

    /// The limit of that fallback: generation 2 released groups whose files generation 1 still
    /// lists. Opening generation 1 reads what is left (the lost chunks as damage, never other
    /// bytes), and the vault still commits: files of its groups that are gone are made again.
    @Test func olderGenerationAfterAReleaseStillCommits() throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage, count: 128)
        // 60 chunks span four groups or more, whatever the cover count: deleting them frees at
        // least two, and all but one are released. Format 1's fallback to the older slot.
        let vault = try TestVaults.open(storage, format: .one)
        // As in TwoGenerations: no second root at lock, so generation 1 stays in the other slot.
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        let big = streamContent(60 * Format.payloadSize, seed: 8)
        try vault.makeFile("big", big)
        try vault.makeFile("small", [1, 2])
        try vault.commit()
        let withBig = storage.snapshot.count
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.commit()
        try vault.lock()
        try #require(storage.snapshot.count < withBig, "generation 2 released groups")
        storage.flipBit(numbers.name(0), at: 77)

        let older = try TestVaults.open(storage, format: .one)
        #expect(older.generation == 1)
        #expect(try older.readAll("small") == [1, 2])
        expectDamagedData("big, whose released chunks are gone") { _ = try older.readAll("big") }
        try older.remove(Array("big".utf8), from: Vault.rootID)
        try older.commit()
        // The files big held are free now, those that are gone among them.
        try older.makeFile("new", streamContent(60 * Format.payloadSize, seed: 9))
        try older.lock()
        let again = try TestVaults.open(storage)
        expectSame(try again.readAll("new"), streamContent(60 * Format.payloadSize, seed: 9), "written after the fallback")
        try again.lock()
        try checkStorageInvariants(storage)
    }

    enum SlotDamage: String, CaseIterable, Sendable {
        case bothFlipped, bothZeroFilled, newestFlippedOlderDeleted, newestDeletedOlderTruncated, slotsSwapped
        case slotsFromAnotherVault, bothForeign
    }

    /// Something is at the vault's index names and nothing opens: damagedIndex, and the storage
    /// is left byte for byte as it was (R-VLT-2: never overwritten).
    @Test(arguments: SlotDamage.allCases)
    func noSlotOpensIsDamageAndNothingIsWritten(_ damage: SlotDamage) throws {
        let fixture = try TwoGenerations()
        let storage = fixture.storage
        let newest = fixture.newestSlot, older = fixture.olderSlot
        switch damage {
        case .bothFlipped:
            storage.flipBit(newest, at: 30)
            storage.flipBit(older, at: Format.fileSize - 3)
        case .bothZeroFilled:
            storage.tamper(newest, with: [UInt8](repeating: 0, count: Format.fileSize))
            storage.tamper(older, with: [UInt8](repeating: 0, count: Format.fileSize))
        case .newestFlippedOlderDeleted:
            storage.flipBit(newest, at: 100_000)
            storage.tamper(older, with: nil)
        case .newestDeletedOlderTruncated:
            storage.tamper(newest, with: nil)
            storage.tamper(older, with: Array(storage.bytes(older).prefix(4096)))
        case .slotsSwapped:
            // Each root is sealed with its slot number as context.
            let a = storage.bytes(newest), b = storage.bytes(older)
            storage.tamper(newest, with: b)
            storage.tamper(older, with: a)
        case .slotsFromAnotherVault:
            let other = try TestVaults.open(storage, seed: 2)
            try other.makeFile("x", [1])
            try other.commit()
            try other.makeFile("y", [2])
            try other.lock()
            let otherNumbers = try FileNumbers(storage, seed: 2, count: 2)
            storage.tamper(newest, with: storage.bytes(otherNumbers.name(0)))
            storage.tamper(older, with: storage.bytes(otherNumbers.name(1)))
        case .bothForeign:
            storage.tamper(newest, with: nil)
            storage.tamper(older, with: nil)
            storage.plantForeign(newest)
            storage.plantForeign(older)
        }
        let damaged = storage.snapshot
        let allNames = Set(try storage.listAllNames())
        for readOnly in [true, false] {
            expectDamagedIndex("read-only: \(readOnly)") { _ = try TestVaults.open(storage, readOnly: readOnly) }
        }
        expectUnchanged(storage, since: damaged, "failed opens")
        #expect(Set(try storage.listAllNames()) == allNames)
    }

    /// A foreign entry (a folder, a link, a file of another size) at a new vault's index name is
    /// damage too, not an empty vault: writing a first commit there would replace it.
    @Test func foreignEntryAtTheIndexNameOfANewVault() throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage, seed: 3, count: 2)
        storage.plantForeign(numbers.name(1))
        let before = storage.snapshot
        expectDamagedIndex { _ = try TestVaults.open(storage, seed: 3) }
        expectUnchanged(storage, since: before, "failed open")
    }

    enum PageDamage: String, CaseIterable, Sendable { case bitFlip, zeroFill, truncated, deleted, olderVersion, otherPage }

    /// The root opens but a page it lists does not: damagedIndex at open, nothing written.
    @Test(arguments: PageDamage.allCases)
    func damagedIndexPageFailsTheOpen(_ damage: PageDamage) throws {
        let storage = try TestVaults.storage()
        let numbers = try FileNumbers(storage)
        let vault = try TestVaults.open(storage)
        // Counted page writes: no refilled files among them (§9.2 step 6).
        vault.state.withLock { $0.writer.refillsFreedFiles = false }
        try vault.makeFile("a", [1, 2, 3])
        try vault.makeFile("big", streamContent(Format.payloadSize, seed: 4))
        try vault.commit()
        try vault.setAttributes(Vault.rootID, mtime: 1)
        try vault.commit()
        // Now without covers in the way: a rename rewrites exactly one page (and the root).
        var before = storage.snapshot
        try vault.rename(Array("a".utf8), in: Vault.rootID, to: Array("b".utf8), in: Vault.rootID)
        try vault.commit()
        let olderPage = numbers.dataFiles(SnapshotDiff(before, storage.snapshot).written)
        try #require(olderPage.count == 1)
        let olderBytes = storage.bytes(olderPage[0])
        before = storage.snapshot
        try vault.rename(Array("b".utf8), in: Vault.rootID, to: Array("c".utf8), in: Vault.rootID)
        try vault.commit()
        let page = try #require(numbers.dataFiles(SnapshotDiff(before, storage.snapshot).written).first)
        try vault.lock()
        #expect(page != olderPage[0])

        switch damage {
        case .bitFlip: storage.flipBit(page, at: 50_000)
        case .zeroFill: storage.tamper(page, with: [UInt8](repeating: 0, count: Format.fileSize))
        case .truncated: storage.tamper(page, with: Array(storage.bytes(page).dropLast(16)))
        case .deleted: storage.tamper(page, with: nil)
        case .olderVersion: storage.tamper(page, with: olderBytes)
        case .otherPage:
            // A page of the same vault from another file: sealed with the same key, but the root
            // records the nonce of the page it means.
            storage.tamper(page, with: olderBytes)
            storage.tamper(olderPage[0], with: olderBytes)
        }
        let damaged = storage.snapshot
        for readOnly in [true, false] {
            expectDamagedIndex("read-only: \(readOnly)") { _ = try TestVaults.open(storage, readOnly: readOnly) }
        }
        expectUnchanged(storage, since: damaged, "failed opens")
    }
}
