import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// A new vault is written in format 2 (docs/FORMAT.md §13), checked from outside the engine:
/// the pattern finds only the unlock record; its vault key and root locator open both slots,
/// which hold the same newest root; every page, chunk and member opens with the key its parent
/// records, and with nothing else.
@Suite struct FormatTwoVaultTests {
    static let payload = Format.payloadSize
    static let patternKey = [UInt8](repeating: 1, count: 32)

    /// The chain from the pattern key to the roots, done from FORMAT.md alone.
    struct Chain {
        let unlockName: String
        let record: UnlockRecord
        let slotNames: [String]
        let rootKey: SecretBytes

        init(_ files: [String: [UInt8]]) throws {
            let patternKey = try SecretBytes(copying: FormatTwoVaultTests.patternKey)
            let locator = try HKDF.deriveKey(from: patternKey, salt: [], info: Label.locator, count: 32)
            let indexKey = try HKDF.deriveKey(from: patternKey, salt: [], info: Label.indexKey, count: 32)
            unlockName = FileName.encode(try HKDF.deriveBytes(from: locator, salt: [], info: Label.unlockName + [5] + Array("local".utf8),
                                                              count: 16))
            let file = try #require(files[unlockName], "no unlock record at the pattern's name")
            let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .unlockRecord, version: 2, key: .secret(indexKey),
                                               seal: .unlock(location: Array("local".utf8)))
            record = try UnlockRecord.decode(body[...])
            let rootLocator = try SecretBytes(copying: record.rootLocator)
            slotNames = try (0..<2).map { slot in
                FileName.encode(try HKDF.deriveBytes(from: rootLocator, salt: [], info: Label.indexName + [UInt8(slot)] + Array("local".utf8),
                                                     count: 16))
            }
            rootKey = try HKDF.deriveKey(from: SecretBytes(copying: record.vaultKey), salt: [], info: Label.rootKey, count: 32)
        }

        func root(_ files: [String: [UInt8]], slot: Int) throws -> IndexRootV2 {
            let file = try #require(files[slotNames[slot]], "slot \(slot) missing")
            let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: 2, key: .secret(rootKey),
                                               seal: .indexRootV2(slot: UInt64(slot)))
            return try IndexRootV2.decode(body[...])
        }
    }

    @Test func aNewVaultIsFormatTwoFromItsFirstCommit() throws {
        let storage = try TestVaults.storage()
        let covers = Set(storage.snapshot.keys)
        let vault = try TestVaults.open(storage)
        #expect(vault.formatVersion == 2)
        let small = TestVaults.content(3000, seed: 1), big = streamContent(2 * Self.payload + 77, seed: 2)
        try vault.makeFile("small", small)
        try vault.makeFile("big", big)
        try vault.commit()
        try vault.makeFile("later", [7])
        try vault.lock()
        try checkStorageInvariants(storage)
        let files = storage.snapshot

        // The pattern's format-1 names hold nothing: no format-1 slot, no NK-named file.
        let formatOne = try TestVaults.secrets()
        for number: UInt64 in 0..<256 { #expect(files[try formatOne.fileName(number)] == nil, "format-1 name of file \(number)") }
        let chain = try Chain(files)
        #expect(chain.record.role == .owner)
        #expect(!covers.contains(chain.unlockName))
        let roots = try (0..<2).map { try chain.root(files, slot: $0) }
        #expect(roots[0].encode() == roots[1].encode(), "both slots hold the newest root")
        let root = roots[0]
        #expect(root.generation == 2)
        #expect(root.devices.count == 1 && root.devices[0].itemPrefix != 0)
        #expect(root.specialFiles.map(\.file) == [chain.record.ownFile])
        #expect(FileName.encode(root.specialFiles[0].name) == chain.unlockName)

        // Pages with their own keys; records of version 2 with per-seal keys.
        let namesKey = try SecretBytes(copying: root.devices[0].namesKey)
        func name(_ number: UInt64) throws -> String {
            FileName.encode(try HKDF.deriveBytes(from: namesKey, salt: [], info: Label.fileName + withUnsafeBytes(of: number.littleEndian) { Array($0) }, count: 16))
        }
        var records: [UInt64: ItemRecord] = [:]
        var chunkEntries: [ChunkSegmentV2.Entry] = []
        var pageKeys = Set<[UInt8]>()
        for ref in root.top {
            #expect(pageKeys.insert(ref.pageKey).inserted, "a page key used twice")
            let file = try #require(files[try name(ref.file.number)])
            let body = try Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexPage, version: 2,
                                               key: .secret(try SecretBytes(copying: ref.pageKey)), seal: .indexPageV2(level: 0))
            guard case .leaf(let leaf) = try IndexPageV2.decode(body[...], level: 0) else { Issue.record("not a leaf"); continue }
            for (key, value) in leaf {
                if key.sub == 0 { records[key.itemID] = try ItemRecord.decode(value) } else { chunkEntries += try ChunkSegmentV2.decode(value) }
            }
        }
        #expect(records.values.allSatisfy { $0.recordVersion == 2 && $0.itemKey.isEmpty })
        #expect(records.keys.filter { $0 != Vault.rootID }.allSatisfy { $0 >> 32 == UInt64(root.devices[0].itemPrefix) })
        #expect(records.values.allSatisfy { $0.version >= 1 })
        #expect(chunkEntries.count == 3)
        var opened: [[UInt8]] = []
        for (i, entry) in chunkEntries.enumerated() {
            guard case .key(let key) = entry.seal else { Issue.record("scheme 1 in a new vault"); continue }
            let file = try #require(files[try name(entry.file.number)])
            opened.append(try Sealer.openEnvelope(file, expectedNonce: nil, kind: .chunk, version: 2,
                                                  key: .secret(try SecretBytes(copying: key)), seal: .chunkV2(index: i)))
        }
        #expect(opened.reduce([], +) == big)
        let smallRecord = try #require(records.values.first { $0.links.first?.name == Array("small".utf8) })
        guard case .packed(let member) = smallRecord.layout else { Issue.record("small is not packed"); return }
        #expect(member.sealedLength == UInt32(small.count + 40))
        let pack = try #require(files[try name(member.fileNumber)])
        let sealed = pack[Int(member.offset)..<Int(member.offset + member.sealedLength)]
        let content = try Sealer.open(sealed.dropFirst(24), nonce: Array(sealed.prefix(24)), key: .secret(try SecretBytes(copying: member.key)),
                                      seal: .memberV2)
        #expect(content == small)

        let again = try TestVaults.open(storage)
        #expect(again.formatVersion == 2 && again.rollbackWarning == nil)
        #expect(try again.readAll("small") == small)
        #expect(try again.readAll("big") == big)
        #expect(try again.readAll("later") == [7])
    }

    /// The rollback table of docs/FORMAT-2-DESIGN.md §E. Generation 5 belongs in slot 1 (its
    /// original); slot 0 holds its copy. nil: no file; .some(nil): a file that does not open.
    @Test func theSlotsAgainstTheRollbackTable() {
        let quiet: [[UInt64??]] = [[5, 5], [4, 5], [.some(nil), 5], [nil, 1], [.some(nil), 1], [0 + 4, 5]]
        for slots in quiet { #expect(FormatTwoVault.rollbackWarning(slots) == nil, "\(slots)") }
        let said: [[UInt64??]] = [[nil, 5], [3, 5], [5, .some(nil)], [5, nil], [5, 3], [5, 4]]
        for slots in said {
            let warning = FormatTwoVault.rollbackWarning(slots)
            #expect(warning?.hasSuffix("generation 5") == true || warning?.contains("opened generation 5") == true, "\(slots): \(warning ?? "nil")")
        }
        #expect(FormatTwoVault.rollbackWarning([nil, nil]) == nil)
    }

    /// Format 2's per-seal keys cost bytes in the index (43-byte chunk entries for 34, 52-byte
    /// page refs, 32-byte member keys) and 24 bytes per member (its nonce moves into the pack):
    /// the same tree takes at most one group more than in format 1.
    @Test func theStorageGrowsLittleOverFormatOne() throws {
        func files(_ format: StorageFormat) throws -> (files: Int, pages: Int) {
            let storage = try TestVaults.storage(random: DeterministicRandom(seed: [UInt8](repeating: 3, count: 32)))
            let start = storage.snapshot.count
            let vault = try TestVaults.open(storage, random: DeterministicRandom(seed: [UInt8](repeating: 4, count: 32)), format: format)
            let folder = try vault.create(.folder, in: Vault.rootID, named: Array("tree".utf8), mode: 0o755)
            for i in 0..<2000 { try vault.makeFile("file-\(i)", TestVaults.content(100 + (i * 37) % 4000, seed: UInt64(i)), in: folder) }
            try vault.makeFile("big", streamContent(40 * Self.payload + 5, seed: 5))
            try vault.lock()
            let pages = vault.statistics.pageWrites
            return (storage.snapshot.count - start, pages)
        }
        let one = try files(.one), two = try files(.two)
        print("storage files for 2,000 small files and a 10 MiB one: format 1 \(one.files) (\(one.pages) pages), format 2 \(two.files) (\(two.pages) pages)")
        #expect(two.files <= one.files + 16)
    }

    /// Something at the pattern's unlock name that does not open (a foreign entry, another
    /// file of the storage size) is damage, never a new vault: nothing is written over it.
    @Test func somethingElseAtTheUnlockNameIsDamage() throws {
        for foreign in [true, false] {
            let storage = try TestVaults.storage()
            let name = try FormatTwoKeys.unlockName(locator: try TestVaults.secrets().locator)
            if foreign { storage.plantForeign(name) } else { storage.tamper(name, with: try SystemRandom().bytes(Format.fileSize)) }
            let before = storage.snapshot
            for readOnly in [true, false] {
                expectDamagedIndex("foreign: \(foreign), read-only: \(readOnly)") { _ = try TestVaults.open(storage, readOnly: readOnly) }
            }
            expectUnchanged(storage, since: before, "failed opens")
        }
    }

    @Test func itemsCountTheirVersions() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        let id = try vault.makeFile("f", [1])
        try vault.commit()
        try vault.write(id, offset: 0, bytes: [2])
        try vault.commit()
        try vault.makeFile("g", [3])
        try vault.commit()
        #expect(vault.state.withLock { $0.tree.items[id]!.record.version } == 2)
        try vault.lock()
        let again = try TestVaults.open(storage)
        #expect(again.state.withLock { $0.tree.items[id]!.record.version } == 2)
    }

    @Test func aCommitRefillsWhatItFreed() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        try vault.makeFile("big", streamContent(3 * Self.payload, seed: 3))
        try vault.commit()
        let before = storage.snapshot
        try vault.remove(Array("big".utf8), from: Vault.rootID)
        try vault.commit()
        // The three chunk files and the replaced page: random at once, both slots newer.
        #expect(vault.statistics.refilledFiles >= 4)
        let changed = SnapshotDiff(before, storage.snapshot).changed
        #expect(changed.count >= 4 + 2)
    }

    @Test func aFirstCommitCutShortLeavesNothing() throws {
        let storage = try TestVaults.storage()
        let before = storage.snapshot
        var mutations = 0
        while true {
            let attempt = SimulatedStorageFolder()
            for (name, bytes) in before { attempt.tamper(name, with: bytes) }
            let vault = try TestVaults.open(attempt)
            try vault.makeFile("big", streamContent(Self.payload + 5, seed: 4))
            attempt.crash(afterMutations: mutations)
            var done = true
            do { try vault.commit() } catch VaultError.store(.simulatedCrash) { done = false }
            attempt.powerLoss()
            let reopened = try TestVaults.open(attempt)
            if reopened.isNew {
                try reopened.lock()
                #expect(attempt.snapshot == before, "crash after \(mutations) mutations: the storage is not as before")
            } else {
                #expect(try reopened.readAll("big") == streamContent(Self.payload + 5, seed: 4))
                try reopened.lock()
                try checkStorageInvariants(attempt)
            }
            if done { break }
            mutations += 1
            try #require(mutations < 200)
        }
    }
}
