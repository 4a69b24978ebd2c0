@testable import VaultCore
import Testing
import VaultCrypto
import VaultFormat
import VaultStore

/// fsck's whole-index rules of index version 3 (docs/FORMAT.md §15.6's last row, §15.7; issue 17
/// step 5): one crafted storage per rule, its leaf sealed again with the vault's page key. A
/// normal open refuses it; fsck's open reports exactly the rule's line and writes nothing;
/// `repair` writes the derived records again (a cycle of folders goes into lost+found), after
/// which the check is clean, a normal open works and every file keeps its bytes.
@Suite struct IndexThreeFsckTests {
    typealias Records = [(key: RecordKey, value: [UInt8])]

    /// What a case needs to know of the vault to craft its damage and name its line.
    struct Known {
        let page: FileRef
        let numbers: IndexRecordsV3.Numbers
        let hash: (String) throws -> UInt32
        let ids: [String: UInt64]
    }

    /// IndexThreeVaultTests' vault, with folders x/y and a file x/y/z (for a cycle), committed
    /// and still open; every record lies on one leaf.
    static func committed() throws -> (SimulatedStorageFolder, Vault, Known) {
        let (storage, vault) = try IndexThreeVaultTests.committed()
        let x = try vault.create(.folder, in: Vault.rootID, named: Array("x".utf8), mode: 0o755)
        let y = try vault.create(.folder, in: x, named: Array("y".utf8), mode: 0o750)
        let z = try vault.makeFile("z", TestVaults.content(5_000, seed: 3), in: y)
        try vault.commit()
        let known = try vault.state.withLock { state in
            let three = try #require(state.committer.indexThree)
            #expect(state.committer.pageTable.pages.count == 1, "one leaf")
            let ref = try #require(state.committer.pageTable.pages.first?.ref)
            return Known(page: FileRef(raw: ref.fileNumber), numbers: IndexRecordsV3.Numbers(state.writer.allocator),
                         hash: { try three.hash(Array($0.utf8)) },
                         ids: ["x": x, "y": y, "z": z, "note-1": try state.tree.lookup(Vault.rootID, Array("note-1".utf8))])
        }
        return (storage, vault, known)
    }

    /// The vault's leaf that holds `key` (its first leaf for nil) sealed again with its key,
    /// `change` made to its records (kept in key order).
    static func rewriteLeaf(_ vault: Vault, _ storage: any StorageFolder, holding key: RecordKey? = nil,
                            _ change: (inout Records) throws -> Void) throws {
        try vault.state.withLock { state in
            let pages = state.committer.pageTable.pages
            let ref = try #require((key.map { key in pages.first { $0.keys.contains(key) } } ?? pages.first)?.ref)
            let name = try state.name(ref.fileNumber), arena = state.session.arena, version = IndexRootV3.envelopeVersion
            let body = try Sealer.openEnvelope(try #require(try storage.read(name)), expectedNonce: nil, kind: .indexPage, version: version,
                                               key: .arena(ref.key!, arena), seal: .indexPageV2(level: 0))
            guard case .leaf(var records) = try IndexPageV2.decode(body[...], level: 0) else { throw VaultError.wrongType }
            try change(&records)
            records.sort { $0.key < $1.key }
            let changed = IndexPageV2.encode(level: 0, .leaf(records))
            let (_, file) = try Sealer.sealEnvelope(kind: .indexPage, version: version, body: changed[...], key: .arena(ref.key!, arena),
                                                    seal: .indexPageV2(level: 0), random: SystemRandom())
            try storage.replace(name, contents: file)
        }
    }

    static func openForFsck(_ storage: SimulatedStorageFolder, readOnly: Bool) throws -> Vault {
        var options = Vault.Options(readOnly: readOnly, cacheBytes: 8 << 20)
        options.indexThree = true
        options.defersIndexChecks = true
        return try Vault.open(storage: storage, secrets: TestVaults.secrets(), options: options, clock: ManualClock())
    }

    static func index(_ records: Records, _ key: RecordKey) throws -> Int { try #require(records.firstIndex { $0.key == key }) }

    static let rootSummary = IndexKeyV3.folderSummary(Vault.rootID).recordKey
    static let blockKey = IndexKeyV3.fileBlock(device: 0, block: 0).recordKey

    /// Each case: what the normal open says, the damage, and fsck's lines.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let refusal: String
        let craft: @Sendable (inout Records, Known) throws -> [String]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a used file whose bit is clear", refusal: "is held but its bit is clear") { records, known in
            let i = try index(records, blockKey)
            var block = try FileBlock.decode(records[i].value)
            let packs = Set(block.packs.map { Int($0.index) })
            let bit = try #require((0..<FileBlock.numbers).first { block.isHeld($0) && !packs.contains($0) })
            block.held[bit >> 3] &= ~(1 << (bit & 7))
            records[i].value = block.encode()
            return ["index 3, bit clear: file \(bit) is held but its bit is clear (page \(known.page))"]
        },
        Case(name: "a free file whose bit is set", refusal: "but the root does not hold it") { records, known in
            let i = try index(records, blockKey)
            var block = try FileBlock.decode(records[i].value)
            let bit = try #require((0..<FileBlock.numbers).first { known.numbers.isData(UInt64($0)) && !block.isHeld($0) })
            block.held[bit >> 3] |= 1 << (bit & 7)
            records[i].value = block.encode()
            return ["index 3, bit set: file \(bit)'s bit is set, but nothing holds it (page \(known.page))"]
        },
        Case(name: "an entry with no link", refusal: "which has no such link") { records, known in
            // A name of a hash no root entry has, naming a file that has no link of that name.
            let name = try #require((0..<100).lazy.map { "ghost-\($0)" }.first { name in
                (try? known.hash(name)).map { hash in !records.contains { $0.key == IndexKeyV3.folderEntries(Vault.rootID, hash: hash).recordKey } } ?? false
            })
            let hash = try known.hash(name), item = known.ids["note-1"]!
            records.append((IndexKeyV3.folderEntries(Vault.rootID, hash: hash).recordKey,
                            FolderEntries([.init(name: Array(name.utf8), itemID: item, type: .file)]).encode()))
            let s = try index(records, rootSummary)
            var summary = try FolderSummary.decode(records[s].value)
            summary.entryCount += 1
            records[s].value = summary.encode()
            return ["index 3, entry without link: folder 1, hash \(hash): item \(item) has no such link (page \(known.page))"]
        },
        Case(name: "a folder nothing reaches", refusal: "items not reachable from the root folder") { records, known in
            // x moves under its own child y: x's link, the root's entry and y's, both summaries.
            let (x, y) = (known.ids["x"]!, known.ids["y"]!), hash = try known.hash("x")
            let r = try index(records, IndexKeyV3.item(x).recordKey)
            var record = try ItemRecord.decode(records[r].value)
            record.links = [ItemRecord.Link(parentID: y, name: Array("x".utf8))]
            records[r].value = record.encode()
            let e = try index(records, IndexKeyV3.folderEntries(Vault.rootID, hash: hash).recordKey)
            var entries = try FolderEntries.decode(records[e].value, hash: hash, entryHash: { try known.hash(String(decoding: $0, as: UTF8.self)) })
            entries.entries.removeAll { $0.itemID == x }
            if entries.entries.isEmpty { records.remove(at: e) } else { records[e].value = entries.encode() }
            records.append((IndexKeyV3.folderEntries(y, hash: hash).recordKey,
                            FolderEntries([.init(name: Array("x".utf8), itemID: x, type: .folder)]).encode()))
            for (folder, step) in [(Vault.rootID, -1), (y, 1)] {
                let s = try index(records, IndexKeyV3.folderSummary(folder).recordKey)
                var summary = try FolderSummary.decode(records[s].value)
                summary.entryCount = UInt64(Int(summary.entryCount) + step)
                summary.subfolderCount = UInt64(Int(summary.subfolderCount) + step)
                records[s].value = summary.encode()
            }
            return ["index 3, unreached: folder \(x) is not reached from the root folder (page \(known.page))",
                    "index 3, unreached: folder \(y) is not reached from the root folder (page \(known.page))",
                    "index 3, unreached: item \(known.ids["z"]!) is not reached from the root folder (page \(known.page))"]
        },
        Case(name: "a wrong summary", refusal: "the summary of folder 1 counts") { records, known in
            let s = try index(records, rootSummary)
            let right = try FolderSummary.decode(records[s].value)
            records[s].value = FolderSummary(entryCount: right.entryCount + 1, subfolderCount: right.subfolderCount).encode()
            return ["index 3, summary: folder 1 counts \(right.entryCount + 1) entries, \(right.subfolderCount) folders; its entries are \(right.entryCount), \(right.subfolderCount) (page \(known.page))"]
        },
        Case(name: "a list without its item", refusal: "member list is not its members") { records, known in
            let l = try #require(records.firstIndex { record in
                guard case .packMembers(device: 0, pack: _)? = try? IndexKeyV3(record.key, deviceCount: 1) else { return false }
                return (try? PackMembers.decode(record.value))?.itemIDs.count ?? 0 > 1
            })
            guard case .packMembers(device: _, pack: let pack) = try IndexKeyV3(records[l].key, deviceCount: 1) else { throw VaultError.wrongType }
            var list = try PackMembers.decode(records[l].value)
            let item = list.itemIDs.removeLast()
            records[l].value = list.encode()
            return ["index 3, member list: pack \(pack)'s list lacks item \(item)"]
        },
        Case(name: "a wrong pack entry", refusal: "live bytes to") { records, known in
            let i = try index(records, blockKey)
            var block = try FileBlock.decode(records[i].value)
            let right = try #require(block.packs.first)
            block.packs[0].liveBytes -= 1
            records[i].value = block.encode()
            return ["index 3, pack entry: pack \(right.index)'s entry says \(right.liveBytes - 1) live bytes to \(right.reservedEnd); its members take \(right.liveBytes) to \(right.reservedEnd) (page \(known.page))"]
        },
    ]

    @Test(arguments: cases)
    func fsckReportsTheRuleAndRepairsIt(_ damage: Case) throws {
        let (storage, vault, known) = try Self.committed()
        let before = try vault.tree()
        var lines: [String] = []
        try Self.rewriteLeaf(vault, storage) { lines = try damage.craft(&$0, known) }
        try vault.lock()

        // A mount (any open but fsck's) refuses it, naming the rule, and writes nothing.
        IndexThreeVaultTests.expectRefused(storage, damage.refusal)

        // fsck's look: the rule's line, nothing else, nothing written.
        let damaged = storage.snapshot
        let looking = try Self.openForFsck(storage, readOnly: true)
        let report = try looking.check()
        #expect(report.indexProblems == lines)
        #expect(!report.isClean && report.damagedItems.isEmpty && report.storageProblems.isEmpty, "\(report)")
        #expect(throws: VaultError.readOnly) { try looking.repair(report) }
        try looking.lock()
        expectUnchanged(storage, since: damaged, "fsck without --repair")

        // --repair: clean afterwards, and for a normal open; every file with its bytes.
        let repairing = try Self.openForFsck(storage, readOnly: false)
        try repairing.repair(try repairing.check())
        let after = try repairing.check()
        #expect(after.isClean, "\(after.indexProblems) \(after.storageProblems)")
        try repairing.lock()
        let reopened = try TestVaults.open(storage, indexThree: true)
        defer { try? reopened.lock() }
        try IndexThreeVaultTests.expectRecordsExact(reopened, damage.name)
        var expected = before
        if !report.unreachedFolders.isEmpty {
            // The cycle's first folder (x) went into lost+found under its number, with y and z.
            #expect(report.unreachedFolders == [known.ids["x"]!, known.ids["y"]!])
            let moved = "lost+found/\(known.ids["x"]!)"
            expected = Dictionary(uniqueKeysWithValues: before.map { path, entry in
                (path == "x" || path.hasPrefix("x/") ? moved + path.dropFirst() : path, entry)
            })
            expected["lost+found"] = .folder(mode: 0o700)
        }
        expectSame(try reopened.tree(), expected, "after the repair")
    }

    /// A clean index-3 vault has no finding, and fsck's open of it changes nothing.
    @Test func aCleanVaultHasNoFinding() throws {
        let (storage, vault, _) = try Self.committed()
        try vault.lock()
        let locked = storage.snapshot
        let looking = try Self.openForFsck(storage, readOnly: true)
        let report = try looking.check()
        #expect(report.isClean && report.indexProblems.isEmpty && report.unreachedFolders.isEmpty, "\(report)")
        try looking.lock()
        expectUnchanged(storage, since: locked, "fsck of a clean vault")
    }

    /// Leaves read one after the other: a folder whose entries span leaves keeps its summary
    /// check (the summary on one leaf, its entries on the next ones), and a name missing from
    /// an entry record of a later leaf is found with its summary, each line naming its page.
    @Test func aFolderOverSeveralLeavesIsCheckedPageByPage() throws {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, indexThree: true)
        let many = try vault.create(.folder, in: Vault.rootID, named: Array("many".utf8), mode: 0o755)
        let long = String(repeating: "n", count: 200)
        for i in 0..<3_000 { try vault.makeFile("\(long)-\(i)", [], in: many) }
        try vault.commit()
        let before = try vault.tree()
        let (summaryPage, leaves) = try vault.state.withLock { state in
            let pages = state.committer.pageTable.pages
            let summary = try #require(pages.first { $0.keys.contains(IndexKeyV3.folderSummary(many).recordKey) }?.ref)
            return (FileRef(raw: summary.fileNumber), pages.count)
        }
        try #require(leaves >= 3, "\(leaves) leaves")
        let clean = try vault.check()
        #expect(clean.isClean, "\(clean.indexProblems.prefix(3))")
        // An entry record of `many` on its last leaf loses a name.
        var removed: (item: UInt64, hash: UInt32)?
        func isEntries(_ key: RecordKey) -> Bool { key.itemID == many && key.sub >= IndexKeyV3.firstEntriesSub }
        let (entriesKey, entriesPage) = try vault.state.withLock { state in
            let page = try #require(state.committer.pageTable.pages.last { $0.keys.contains(where: isEntries) })
            return (try #require(page.keys.last(where: isEntries)), FileRef(raw: try #require(page.ref).fileNumber))
        }
        #expect(entriesPage != summaryPage, "the entries span leaves")
        let known = try vault.state.withLock { state in try #require(state.committer.indexThree) }
        try Self.rewriteLeaf(vault, storage, holding: entriesKey) { records in
            let i = try Self.index(records, entriesKey), hash = entriesKey.sub - IndexKeyV3.firstEntriesSub
            var entries = try FolderEntries.decode(records[i].value, hash: hash, entryHash: known.hash)
            removed = (entries.entries.removeLast().itemID, hash)
            if entries.entries.isEmpty { records.remove(at: i) } else { records[i].value = entries.encode() }
        }
        let itemPage = try vault.state.withLock { state in
            FileRef(raw: try #require(state.committer.pageTable.pages.first { $0.keys.contains(IndexKeyV3.item(removed!.item).recordKey) }?.ref).fileNumber)
        }
        try vault.lock()
        let looking = try Self.openForFsck(storage, readOnly: true)
        #expect(try looking.check().indexProblems == [
            "index 3, summary: folder \(many) counts 3000 entries, 0 folders; its entries are 2999, 0 (page \(summaryPage))",
            "index 3, link without entry: item \(removed!.item)'s link in folder \(many), hash \(removed!.hash), has no entry (page \(itemPage))",
        ])
        try looking.lock()
        let repairing = try Self.openForFsck(storage, readOnly: false)
        try repairing.repair(try repairing.check())
        #expect(try repairing.check().isClean)
        try repairing.lock()
        let reopened = try TestVaults.open(storage, indexThree: true)
        defer { try? reopened.lock() }
        expectSame(try reopened.tree(), before, "after the repair")
    }
}
