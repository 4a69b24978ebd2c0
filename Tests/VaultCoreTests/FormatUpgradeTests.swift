import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// docs/FORMAT.md §13.9 (design §G, issue 11 item 5): a format-1 vault becomes format 2 at its
/// first commit, crash-safe at every storage mutation of that commit; its items keep their
/// format-1 key only while they use a format-1 seal; the coercer finds nothing old afterwards.
/// (The checked-in fixture of the format-1 release: `Format1FixtureTests`.)
@Suite struct FormatUpgradeTests {
    static let payload = Format.payloadSize

    static func random(_ seed: UInt8) -> DeterministicRandom { DeterministicRandom(seed: [UInt8](repeating: seed, count: 32)) }

    /// A format-1 vault of two sessions, made by a release without the upgrade: packed files,
    /// a two-chunk file whose first chunk was overwritten, a sparse file, a folder, a link.
    static func formatOneStorage() throws -> SimulatedStorageFolder {
        let storage = try TestVaults.storage(random: random(3))
        let vault = try TestVaults.open(storage, random: random(4), format: .one)
        try vault.create(.folder, in: Vault.rootID, named: Array("dir".utf8), mode: 0o755)
        try vault.makeFile("small", TestVaults.content(1000, seed: 1), in: try vault.id(at: "dir"))
        try vault.makeFile("big", streamContent(payload + 5000, seed: 2))
        try vault.makeFile("gone", TestVaults.content(300, seed: 3))
        let sparse = try vault.makeFile("sparse", [])
        try vault.write(sparse, offset: UInt64(3 * payload + 7), bytes: [1, 2, 3])
        try vault.create(.symlink, in: Vault.rootID, named: Array("link".utf8), mode: 0o777, target: Array("big".utf8))
        try vault.commit()
        try vault.write(try vault.id(at: "big"), offset: 10, bytes: streamContent(100, seed: 4))
        try vault.lock()
        return storage
    }

    /// The upgrade session's changes: a format-1 chunk rewritten, a new small file, a delete.
    static func change(_ vault: Vault) throws {
        try vault.write(try vault.id(at: "big"), offset: UInt64(payload + 1), bytes: [9, 9])
        try vault.makeFile("new", TestVaults.content(700, seed: 5))
        try vault.remove(Array("gone".utf8), from: Vault.rootID)
    }

    static func unlockName() throws -> String { try FormatTwoKeys.unlockName(locator: try TestVaults.secrets().locator) }

    @Test func theFirstCommitUpgradesAndTheFileCountStays() throws {
        let storage = try Self.formatOneStorage()
        // The same session by a release without the upgrade: the files it leaves.
        let control = storage.clone()
        let formatOne = try TestVaults.open(control, format: .one)
        try Self.change(formatOne)
        try formatOne.lock()
        let files = control.snapshot.count
        let vault = try TestVaults.open(storage)
        #expect(vault.formatVersion == 1, "an open writes nothing: format 1 until the commit")
        let before = try vault.tree()
        try vault.lock()
        let reader = try TestVaults.open(storage, readOnly: true)
        #expect(reader.formatVersion == 1, "a session that changes nothing does not upgrade")
        try reader.lock()

        let writer = try TestVaults.open(storage)
        try Self.change(writer)
        let expected = try writer.tree()
        let beforeCommit = storage.snapshot
        try writer.commit()
        #expect(writer.formatVersion == 2)
        // Every free file got random bytes: format-1 seals left there by earlier versions go.
        let free = try writer.state.withLock { state in try state.writer.allocator.freeNumbers.map { try state.name($0) } }
        #expect(!free.isEmpty && writer.statistics.refilledFiles >= free.count)
        for name in free where beforeCommit[name] != nil {
            #expect(storage.snapshot[name] != beforeCommit[name], "free file \(name) refilled")
        }
        let derived = writer.namesArePatternDerived
        #expect(derived.rootLocator && derived.namesKey, "RL = LOC and NKd = NK until a pattern change")
        try writer.lock()
        #expect(storage.snapshot.count == files, "the unlock record took a free file's place: as many files as format 1 leaves")
        #expect(storage.snapshot[try Self.unlockName()] != nil)

        let again = try TestVaults.open(storage, readOnly: true)
        #expect(again.formatVersion == 2 && again.rollbackWarning == nil)
        expectSame(try again.tree(), expected, "after the upgrade")
        #expect(before["gone"] != nil && expected["gone"] == nil)
        let report = try again.check()
        #expect(report.isClean, "\(report.storageProblems)")
        // big's two format-1 chunks and sparse's one; small (layout 3) and new (layout 1).
        #expect(report.chunksChecked == 3 && report.membersChecked == 2)
        try again.lock()
        try checkStorageInvariants(storage)
        // A vault created as format 2 has names of its own.
        let fresh = try TestVaults.open(try TestVaults.storage())
        let own = fresh.namesArePatternDerived
        #expect(!own.rootLocator && !own.namesKey)
        try fresh.lock()
    }

    /// A cut upgrade (its record at its name, the slots format 1) that a release without the
    /// upgrade then wrote, taking the record's free file: the next upgrading open removes the
    /// stale record and the upgrade starts over.
    @Test func aStaleRecordIsRemovedAndTheUpgradeStartsOver() throws {
        let storage = try Self.formatOneStorage()
        let start = storage.snapshot
        let unlockName = try Self.unlockName()
        var mutations = 0
        while true {
            storage.restore(start)
            let vault = try TestVaults.open(storage, random: Self.random(5))
            try Self.change(vault)
            storage.crash(afterMutations: mutations)
            #expect(throws: VaultError.self) { try vault.commit() }
            storage.processCrash()
            if storage.snapshot[unlockName] != nil { break }
            mutations += 1
            try #require(mutations < 200)
        }
        let cut = try TestVaults.open(storage, readOnly: true)
        #expect(cut.formatVersion == 1)
        try cut.lock()
        let older = try TestVaults.open(storage, format: .one)
        // Its first file goes into the lowest free number: the record's.
        try older.makeFile("by-an-older-release", streamContent(Self.payload + 10, seed: 7))
        let expected = try older.tree()
        try older.lock()
        #expect(storage.snapshot.count % Format.groupSize == 1, "the older release made the record's file again")

        let vault = try TestVaults.open(storage)
        #expect(storage.snapshot[unlockName] == nil, "the stale record is gone")
        try checkStorageInvariants(storage)
        try vault.setAttributes(Vault.rootID, mtime: 3)
        try vault.lock()
        let again = try TestVaults.open(storage, readOnly: true)
        #expect(again.formatVersion == 2)
        expectSame(try again.tree(), expected, "after the upgrade")
        #expect(try again.check().isClean)
        try again.lock()
        try checkStorageInvariants(storage)
    }

    /// Upgraded items keep their item key while a format-1 seal of theirs is in use, and new
    /// seals are format 2: the key goes with the last format-1 chunk or member.
    @Test func anItemDropsItsKeyWithItsLastFormatOneSeal() throws {
        let storage = try Self.formatOneStorage()
        let vault = try TestVaults.open(storage)
        func keyed(_ path: String) throws -> Bool {
            let id = try vault.id(at: path)
            return vault.state.withLock { $0.tree.items[id]!.key != nil }
        }
        func schemes(_ path: String) throws -> [Bool] {
            let id = try vault.id(at: path)
            return vault.state.withLock { state in state.tree.items[id]!.chunks.sorted { $0.key < $1.key }.map { $0.value.key != nil } }
        }
        try vault.makeFile("fresh", [1])
        try vault.commit()
        #expect(try keyed("big") && keyed("dir/small") && !keyed("fresh"))
        #expect(try schemes("big") == [false, false])
        try vault.write(try vault.id(at: "big"), offset: 0, bytes: [7])
        try vault.commit()
        #expect(try schemes("big") == [true, false] && keyed("big"), "chunk 1 is still format 1")
        try vault.write(try vault.id(at: "big"), offset: UInt64(Self.payload), bytes: [7])
        try vault.write(try vault.id(at: "dir/small"), offset: 0, bytes: [7])
        try vault.truncate(try vault.id(at: "sparse"), size: 10)
        try vault.commit()
        #expect(try schemes("big") == [true, true])
        #expect(try !keyed("big") && !keyed("dir/small") && !keyed("sparse"))
        let expected = try vault.tree()
        try vault.lock()
        let again = try TestVaults.open(storage, readOnly: true)
        expectSame(try again.tree(), expected, "reopened")
        for path in ["big", "dir/small", "sparse"] {
            let id = try again.id(at: path)
            #expect(again.state.withLock { $0.tree.items[id]!.key == nil }, "\(path)'s record has no item key")
        }
        #expect(try again.check().isClean)
        try again.lock()
    }

    /// After an upgrade, a delete, a truncate and an overwrite and two commits, the coercer
    /// (pattern key and keyring) finds nothing old: neither format-1 seals left in free files by
    /// format 1 (refilled by the upgrade) nor format-2 ones.
    @Test func theCoercerFindsNothingOldAfterAnUpgrade() throws {
        let recovery = try Self.coercedAfterUpgrade(refill: true)
        ForensicRecoveryTests.expectNothingOld(recovery)
    }

    /// The same without refills: a format-1 chunk of an item that keeps its item key (an
    /// overwritten chunk 0, a truncated chunk 1) opens from the free file it was left in.
    @Test func withoutTheRefillFormatOneSealsOfUpgradedItemsStayReadable() throws {
        let recovery = try Self.coercedAfterUpgrade(refill: false)
        let marked = (3...4).filter { tag in recovery.plaintexts.contains { $0.contains(ForensicRecoveryTests.marked(tag, count: 40)) } }
        #expect(marked == [3, 4])
    }

    static func coercedAfterUpgrade(refill: Bool) throws -> Coercer.Recovery {
        func marked(_ tag: Int, _ count: Int) -> [UInt8] { ForensicRecoveryTests.marked(tag, count: count) }
        let storage = try TestVaults.storage()
        let noise = TestVaults.content(2 * payload, seed: 11)
        let old = try TestVaults.open(storage, format: .one)
        // Format 1 as an earlier release left it: no refill of freed files.
        old.state.withLock { $0.writer.refillsFreedFiles = false }
        // Files below the old chunk 0 of "overwritten", freed with it: what the upgrade writes
        // goes there (lowest numbers first), and the old chunk stays where only a refill reaches.
        try old.makeFile("scratch", streamContent(10 * payload, seed: 12))
        try old.makeFile("deleted-small", marked(1, 300))
        try old.makeFile("deleted-big", marked(2, 2 * payload + 5))
        let overwritten = try old.makeFile("overwritten", marked(3, payload) + Array(noise[0..<10]))
        // Three chunks: the truncate below keeps two, so the item keeps its format-1 key.
        try old.makeFile("truncated", noise + marked(4, payload))
        try old.makeFile("rewritten", marked(5, 2_000))
        try old.makeFile("kept", marked(9, 500))
        try old.commit()
        try old.remove(Array("scratch".utf8), from: Vault.rootID)
        try old.write(overwritten, offset: 0, bytes: Array(noise[0..<payload]))
        try old.lock()

        let vault = try TestVaults.open(storage)
        vault.state.withLock { $0.writer.refillsFreedFiles = refill }
        try vault.remove(Array("deleted-small".utf8), from: Vault.rootID)
        try vault.remove(Array("deleted-big".utf8), from: Vault.rootID)
        try vault.truncate(try vault.id(at: "truncated"), size: UInt64(2 * payload))
        let rewritten = try vault.id(at: "rewritten")
        try vault.truncate(rewritten, size: 0)
        try vault.write(rewritten, offset: 0, bytes: Array(noise[0..<2_000]))
        try vault.commit()
        #expect(vault.formatVersion == 2)
        try vault.makeFile("later", Array(noise[0..<700]))
        try vault.commit()
        try vault.setAttributes(Vault.rootID, mtime: 5)
        try vault.commit()
        try vault.lock()

        let patternKey = [UInt8](repeating: 1, count: 32)
        var recovery = try FormatTwoCoercer(files: storage.snapshot, patternKey: patternKey).recover()
        let formatOne = try Coercer(files: storage.snapshot, patternKey: patternKey).recover()
        recovery.plaintexts += formatOne.plaintexts
        recovery.oldItemKeys += formatOne.oldItemKeys
        // The coercer's method reaches format-1 seals: the kept file is a layout-3 member.
        #expect(recovery.plaintexts.contains { $0.contains(marked(9, 40)) }, "the coercer opens the current index")
        return recovery
    }
}
