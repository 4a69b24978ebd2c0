@testable import VaultCore
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// Index version 3 written and read whole (docs/FORMAT.md §15, issue 17 step 3), behind the
/// tests' option: the pages hold the derived records, a vault reopens with its tree and the
/// records it wrote, a reader without index 3 refuses it as newer, and a damaged page or a
/// record that breaks §15.6 fails the open naming it, with nothing written.
@Suite struct IndexThreeVaultTests {
    /// A folder, small files (pack members), a chunked file, a symlink and a second name.
    static func fill(_ vault: Vault) throws {
        let folder = try vault.create(.folder, in: Vault.rootID, named: Array("docs".utf8), mode: 0o755)
        for i in 0..<40 { _ = try vault.makeFile("note-\(i)", TestVaults.content(100 + i * 37, seed: UInt64(i)), in: i % 2 == 0 ? folder : Vault.rootID) }
        let big = try vault.makeFile("big", TestVaults.content(600_000, seed: 99), in: folder)
        try vault.link(big, into: Vault.rootID, named: Array("big-again".utf8))
        _ = try vault.create(.symlink, in: folder, named: Array("link".utf8), mode: 0o777, target: Array("../note-1".utf8))
    }

    /// The records the vault's pages stand for are the ones its tree derives, and pass §15.6.
    static func expectRecordsExact(_ vault: Vault, _ context: String) throws {
        try vault.state.withLock { state in
            try state.loadWholeIndex()
            let three = try #require(state.committer.indexThree, "\(context): index 3")
            try state.readPinsIfUnread()
            #expect(try state.derivedRecords(entryHash: three.hash) == three.records, "\(context): the records written")
            try state.checkRecords(three.records, entryHash: three.hash)
            let keys = Set(state.committer.pageTable.pages.flatMap(\.keys))
            // No record left behind on a page either (a name's entries updated from the journal).
            let derivedKeys = keys.filter { key in
                switch try? IndexKeyV3(key, deviceCount: Int(UInt16.max) + 1) {
                case .item, .segment, nil: false
                default: true
                }
            }
            #expect(derivedKeys == three.records.keys(device: 0).union(three.foreign.keys), "\(context): the pages hold the records")
        }
    }

    @Test func aVaultWrittenAsIndexThreeReopensWithTheSameTree() throws {
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, indexThree: true)
        try Self.fill(vault)
        try vault.commit()
        try Self.expectRecordsExact(vault, "first commit")
        let first = try vault.tree()
        try vault.lock()

        // This release without index 3 (as releases before it): newer, and nothing written.
        let locked = storage.snapshot
        #expect(throws: VaultError.newerFormat(IndexRootV3.envelopeVersion)) { _ = try TestVaults.open(storage) }
        expectUnchanged(storage, since: locked, "the refused open")

        vault = try TestVaults.open(storage, indexThree: true)
        expectSame(try vault.tree(), first, "reopened")
        try Self.expectRecordsExact(vault, "reopened")
        let docs = try vault.lookup(Vault.rootID, Array("docs".utf8))
        try vault.remove(Array("note-3".utf8), from: Vault.rootID)
        try vault.rename(Array("note-4".utf8), in: docs, to: Array("moved".utf8), in: Vault.rootID)
        try vault.rename(Array("docs".utf8), in: Vault.rootID, to: Array("papers".utf8), in: Vault.rootID)
        try vault.write(try vault.lookup(Vault.rootID, Array("big-again".utf8)), offset: 300_000, bytes: Array("changed".utf8))
        try vault.commit()
        try Self.expectRecordsExact(vault, "second commit")
        let second = try vault.tree()
        #expect(second != first)
        try vault.lock()

        vault = try TestVaults.open(storage, indexThree: true)
        defer { try? vault.lock() }
        expectSame(try vault.tree(), second, "reopened after changes")
        try Self.expectRecordsExact(vault, "reopened after changes")
        let report = try vault.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
    }

    @Test func aNewVaultWithoutTheOptionStaysIndexTwo() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage)
        try Self.fill(vault)
        try vault.lock()
        let reopened = try TestVaults.open(storage, indexThree: true)
        defer { try? reopened.lock() }
        #expect(reopened.state.withLock { $0.committer.indexThree == nil })
        #expect(try reopened.contents(ofFolder: Vault.rootID).count == 22)
    }

    /// A filled, committed index-3 vault, still open (the page keys are in its arena).
    static func committed() throws -> (SimulatedStorageFolder, Vault) {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, indexThree: true)
        try fill(vault)
        try vault.commit()
        return (storage, vault)
    }

    /// The storage name of the leaf that holds `key`, and its ref.
    static func leaf(_ vault: Vault, holding key: RecordKey) throws -> (name: String, ref: StoredRef) {
        try vault.state.withLock { state in
            let page = try #require(state.committer.pageTable.pages.first { $0.keys.contains(key) })
            let ref = try #require(page.ref)
            return (try state.name(ref.fileNumber), ref)
        }
    }

    /// The leaf that holds `key` sealed again, as someone with its key would, with `change`
    /// made to its records.
    static func rewriteLeaf(_ vault: Vault, _ storage: SimulatedStorageFolder, holding key: RecordKey,
                            _ change: (inout [(key: RecordKey, value: [UInt8])]) throws -> Void) throws {
        let (name, ref) = try leaf(vault, holding: key)
        try vault.state.withLock { state in
            let arena = state.session.arena, version = IndexRootV3.envelopeVersion
            let body = try Sealer.openEnvelope(storage.bytes(name), expectedNonce: nil, kind: .indexPage, version: version,
                                               key: .arena(ref.key!, arena), seal: .indexPageV2(level: 0))
            guard case .leaf(var records) = try IndexPageV2.decode(body[...], level: 0) else { throw VaultError.wrongType }
            try change(&records)
            let changed = IndexPageV2.encode(level: 0, .leaf(records))
            let (_, file) = try Sealer.sealEnvelope(kind: .indexPage, version: version, body: changed[...], key: .arena(ref.key!, arena),
                                                    seal: .indexPageV2(level: 0), random: SystemRandom())
            storage.tamper(name, with: file)
        }
    }

    /// Opens of the locked vault, read-only or not, fail with `message`; nothing is written.
    /// Opens that read the index whole: one that holds it in part checks each leaf's records,
    /// and leaves the rules across records to fsck (`IndexOnDemandTests`).
    static func expectRefused(_ storage: SimulatedStorageFolder, _ message: String) {
        let damaged = storage.snapshot
        for readOnly in [true, false] {
            do {
                _ = try TestVaults.open(storage, readOnly: readOnly, indexThree: true, onDemand: false)
                Issue.record("opened: \(message)")
            } catch VaultError.damagedIndex(let text) {
                #expect(text.contains(message), "\(text)")
            } catch {
                Issue.record("\(error), expected \(message)")
            }
        }
        expectUnchanged(storage, since: damaged, "failed opens")
    }

    enum Damage: String, CaseIterable, Sendable { case bitFlip, zeroFill, truncated, deleted }

    @Test(arguments: Damage.allCases)
    func aDamagedLeafFailsTheOpenNamingIt(_ damage: Damage) throws {
        let (storage, vault) = try Self.committed()
        let (name, ref) = try Self.leaf(vault, holding: IndexKeyV3.folderSummary(Vault.rootID).recordKey)
        try vault.lock()
        switch damage {
        case .bitFlip: storage.flipBit(name, at: 5_000)
        case .zeroFill: storage.tamper(name, with: [UInt8](repeating: 0, count: Format.fileSize))
        case .truncated: storage.tamper(name, with: Array(storage.bytes(name).dropLast(16)))
        case .deleted: storage.tamper(name, with: nil)
        }
        // A file of another size is refused by the storage's check, before any page is read.
        Self.expectRefused(storage, damage == .truncated ? "storage file \(name)" : "index page \(FileRef(raw: ref.fileNumber))")
    }

    /// Records sealed right but breaking §15.6: each refused by the open with its rule.
    @Test func recordsThatBreakARuleFailTheOpen() throws {
        let summary = IndexKeyV3.folderSummary(Vault.rootID).recordKey
        let cases: [(String, (inout [(key: RecordKey, value: [UInt8])]) throws -> Void)] = [
            ("the summary of folder 1 counts 23 entries", { records in
                let i = records.firstIndex { $0.key == summary }!
                var value = try FolderSummary.decode(records[i].value)
                value.entryCount += 1
                records[i].value = value.encode()
            }),
            ("has no entry", { records in
                // The root's entry records: one goes, and the page's keys stay in order.
                let i = records.firstIndex { $0.key.itemID == Vault.rootID && $0.key.sub >= IndexKeyV3.firstEntriesSub }!
                records.remove(at: i)
            }),
            ("a name whose hash is not", { records in
                let i = records.firstIndex { $0.key.itemID == Vault.rootID && $0.key.sub >= IndexKeyV3.firstEntriesSub }!
                records[i].key.sub = records[i].key.sub == UInt32.max ? records[i].key.sub - 1 : records[i].key.sub + 1
                records.sort { $0.key < $1.key }
            }),
            ("is held but its bit is clear", { records in
                let i = records.firstIndex { IndexKeyV3.isReserved($0.key.itemID) && $0.key.itemID >> 32 == 0 }!
                var block = try FileBlock.decode(records[i].value)
                let byte = block.held.firstIndex { $0 != 0 }!
                block.held[byte] = 0
                block.packs = []
                records[i].value = block.encode()
            }),
        ]
        for (message, change) in cases {
            let (storage, vault) = try Self.committed()
            try Self.rewriteLeaf(vault, storage, holding: summary, change)
            try vault.lock()
            Self.expectRefused(storage, message)
        }
    }
}
