@testable import VaultCore
import DotSafeTestSupport
import Testing
import VaultFormat
import VaultStore

/// Format 2's interior level and the rules for cutting and joining leaves (docs/FORMAT.md
/// §13.5, §15.5), first on the page table alone with synthetic records (millions of keys, no
/// cryptography), then on a vault whose fan-out is small enough that a few thousand files need
/// the level: its pages, its one-file commit, its reopen, its fall back to one level.
@Suite struct IndexLevelsTests {
    static let limit = Format.payloadSize - IndexPageV2.headerSize

    /// A commit of the table as `writeDirtyPages` makes it, with made-up file numbers.
    static func commit(_ table: inout PageTable, _ fanOut: PageTable.FanOut, cost: (RecordKey) -> Int, files: inout UInt64) {
        var written: [Int: [(ref: StoredRef, keys: [RecordKey])]] = [:]
        func ref() -> StoredRef {
            files += 1
            return StoredRef(fileNumber: files, nonce: [UInt8](repeating: 0, count: Format.sealNonceSize))
        }
        var start = 0
        while start < table.pages.count,
              let write = table.nextWrite(from: start, limit: limit, joinsSmall: true, costs: { _, keys in keys.map(cost) }) {
            let keys = (write.first...write.last).flatMap { table.pages[$0].keys }
            for range in write.pieces { written[write.first, default: []].append((ref(), Array(keys[range]))) }
            for joined in write.first + 1 ..< write.last + 1 { written[joined] = [] }
            start = write.last + 1
        }
        _ = table.replaceDirty(with: written)
        _ = table.arrangeParents(fanOut)
        for (index, _) in table.dirtyParents { _ = table.parentWritten(index, at: ref()) }
    }

    /// What every committed table keeps: leaves non-empty, in key order, within the body; the
    /// parents' counts add up to the leaves, each within the fan-out; the root within its room.
    static func checkShape(_ table: PageTable, _ fanOut: PageTable.FanOut, cost: (RecordKey) -> Int) {
        var previous: RecordKey?
        for page in table.pages {
            #expect(!page.keys.isEmpty && !page.dirty)
            #expect(page.keys.map(cost).reduce(0, +) <= limit)
            if let previous { #expect(previous < page.keys[0]) }
            previous = page.keys.last
        }
        #expect(table.parents.map(\.count).reduce(0, +) == (table.parents.isEmpty ? 0 : table.pages.count))
        #expect(table.parents.allSatisfy { $0.count > 0 && $0.count <= fanOut.interior && !$0.dirty })
        #expect(table.top.refs.count <= fanOut.root)
    }

    @Test func tenMillionKeysMadeInOrderFitUnderOneInteriorLevel() {
        // Records of 150 bytes (a small file's item and name): about 1,700 a leaf, 5,900
        // leaves, more than the root's room (§13.5: format 2's writer overflowed there).
        var table = PageTable(), files: UInt64 = 0
        let cost: (RecordKey) -> Int = { _ in 150 }
        let count: UInt64 = 10_000_000
        for batch in stride(from: 0, to: count, by: 200_000) {
            for id in batch..<batch + 200_000 { table.touch(.item(id + 2)) }
            Self.commit(&table, .standard, cost: cost, files: &files)
        }
        Self.checkShape(table, .standard, cost: cost)
        #expect(table.top.level == 1 && table.pages.count > PageTable.FanOut.standard.root)
        #expect(table.pages.map(\.keys.count).reduce(0, +) == Int(count))
        // Made in order: every leaf but the last is full.
        let perLeaf = Self.limit / 150
        #expect(table.pages.dropLast().allSatisfy { $0.keys.count == perLeaf })
        #expect(table.top.refs.count * PageRef.size < Format.payloadSize / 2)
        // §13.5's figures: an interior page holds 5,041 refs, a new one 3,780.
        #expect(PageTable.FanOut.standard.interior == 5_041)
    }

    /// Many keys touched at once (a commit's changed records) leave the table as touching them
    /// one at a time in key order would: the same keys per leaf, the same leaves changed, and
    /// keys counted as added inside a leaf alike (which decides how it is cut).
    @Test func aBatchOfKeysTouchesAsOneAtATimeInKeyOrder() {
        var one = PageTable(), batch = PageTable(), files: UInt64 = 0, batchFiles: UInt64 = 0
        let cost: (RecordKey) -> Int = { 60 + Int($0.itemID % 80) }
        var generator = SeededGenerator(seed: 5)
        var present: [UInt64] = []
        for round in 0..<12 {
            var keys = (0..<2_000).map { _ in RecordKey.item(UInt64.random(in: 2..<40_000, using: &generator)) }
            // Some already there, some twice in the batch.
            keys += present.shuffled(using: &generator).prefix(50).map { RecordKey.item($0) } + keys.prefix(20)
            for key in Set(keys).sorted() { one.touch(key) }
            batch.touch(keys.shuffled(using: &generator))
            #expect(one.pages.map(\.keys) == batch.pages.map(\.keys), "round \(round)")
            #expect(one.pages.map(\.dirty) == batch.pages.map(\.dirty) && one.pages.map(\.insertedInside) == batch.pages.map(\.insertedInside),
                    "round \(round)")
            present = one.pages.flatMap(\.keys).map(\.itemID)
            Self.commit(&one, .standard, cost: cost, files: &files)
            Self.commit(&batch, .standard, cost: cost, files: &batchFiles)
        }
        #expect(one.pages.count > 3, "the keys span leaves: \(one.pages.count)")
    }

    @Test func keysAddedInRandomOrderLeaveLeavesAtLeastFortyPercentFull() {
        var table = PageTable(), files: UInt64 = 0
        let fanOut = PageTable.FanOut(root: 16, interior: 24)
        let cost: (RecordKey) -> Int = { 60 + Int($0.itemID % 80) }
        var generator = SeededGenerator(seed: 17)
        var ids = Array(UInt64(2)..<300_002)
        ids.shuffle(using: &generator)
        for batch in stride(from: 0, to: ids.count, by: 3_000) {
            for id in ids[batch..<batch + 3_000] { table.touch(.item(id)) }
            Self.commit(&table, fanOut, cost: cost, files: &files)
            Self.checkShape(table, fanOut, cost: cost)
        }
        #expect(table.top.level == 1)
        let fills = table.pages.map { Double($0.keys.map(cost).reduce(0, +)) / Double(Self.limit) }
        #expect(fills.min()! >= 0.4, "least full leaf: \(fills.min()!)")

        // 49 in 50 removed at random: small leaves are joined to the next, across parents too,
        // and at half the root's room the interior level goes (joined under their parent only,
        // 11 leaves were left under 8 parents, fills 1% to 31%, and the level stayed).
        ids.shuffle(using: &generator)
        for batch in stride(from: 0, to: 294_000, by: 29_400) {
            for id in ids[batch..<batch + 29_400] { table.remove(.item(id)) }
            Self.commit(&table, fanOut, cost: cost, files: &files)
            Self.checkShape(table, fanOut, cost: cost)
        }
        let small = table.pages.filter { $0.keys.map(cost).reduce(0, +) < Self.limit / 4 }.count
        #expect(small <= 1, "\(small) small leaves of \(table.pages.count)")
        #expect(table.top.level == 0 && table.parents.isEmpty)
        #expect(table.pages.map(\.keys.count).reduce(0, +) == 6_000)
    }

    @Test func parentsEmptiedByRemovalsAreJoinedAndTheRootKeepsItsRoom() {
        // 60 full leaves under parents of 6; then all but the first leaf of each parent emptied.
        // Those leaves are full (nothing to join), so 10 leaves stay, more than half the root's
        // room: the level stays, and 10 parents of one leaf would overflow a root of 8.
        var table = PageTable(), files: UInt64 = 0
        let fanOut = PageTable.FanOut(root: 8, interior: 8)
        let perLeaf = UInt64(Self.limit / 100)
        for id in 0..<perLeaf * 60 { table.touch(.item(id + 2)) }
        Self.commit(&table, fanOut, cost: { _ in 100 }, files: &files)
        #expect(table.pages.count == 60 && table.parents.map(\.count) == [Int](repeating: 6, count: 10))
        let kept = Set(stride(from: 0, to: 60, by: 6).map { table.pages[$0].keys[0] })
        for page in table.pages where !kept.contains(page.keys[0]) { for key in page.keys { table.remove(key) } }
        Self.commit(&table, fanOut, cost: { _ in 100 }, files: &files)
        Self.checkShape(table, fanOut, cost: { _ in 100 })
        #expect(table.pages.count == 10 && table.top.level == 1)
        #expect(table.parents.map(\.count) == [4, 4, 2], "changed parents joined while they hold at most half")
        #expect(table.pages.map(\.keys.count).reduce(0, +) == Int(perLeaf) * 10)
    }

    /// A vault whose root takes 4 refs and interior pages 4: a few thousand files of long names
    /// need the interior level.
    static let small = PageTable.FanOut(root: 4, interior: 4)

    static func name(_ i: Int) -> [UInt8] { Array("\(i)-".utf8) + [UInt8](repeating: UInt8(ascii: "n"), count: 200) }

    @Test func aVaultWithAnInteriorLevelCommitsALeafAndItsParentAndOpensAgain() throws {
        let storage = try TestVaults.storage()
        var vault = try TestVaults.open(storage, fanOut: Self.small)
        for i in 0..<6_000 {
            let id = try vault.create(.file, in: Vault.rootID, named: Self.name(i), mode: 0o644)
            if i % 500 == 0 { try vault.write(id, offset: 0, bytes: Array("file \(i)".utf8)) }
        }
        try vault.commit()
        let shape = vault.state.withLock { ($0.committer.pageTable.pages.count, $0.committer.pageTable.parents.count) }
        #expect(shape.0 > 4 && shape.1 >= 2, "leaves and parents: \(shape)")
        try vault.lock()

        vault = try TestVaults.open(storage, fanOut: Self.small)
        #expect(vault.state.withLock { $0.committer.pageTable.parents.count } == shape.1, "the level is read back as it was")
        #expect(try vault.contents(ofFolder: Vault.rootID).count == 6_000)
        let id = try vault.lookup(Vault.rootID, Self.name(3_000))
        #expect(try vault.read(id, offset: 0, count: 100) == Array("file 3000".utf8))
        // One file changed: its leaf, that leaf's parent, the root.
        let before = vault.statistics.pageWrites
        try vault.write(id, offset: 0, bytes: Array("FILE".utf8))
        try vault.commit()
        #expect(vault.statistics.pageWrites - before == 2)
        #expect(try vault.check().isClean)
        try vault.lock()

        // Most removed: below half the root's room the level goes, and the freed pages with it.
        vault = try TestVaults.open(storage, fanOut: Self.small)
        for i in 0..<6_000 where i != 3_000 { try vault.remove(Self.name(i), from: Vault.rootID) }
        try vault.commit()
        #expect(vault.state.withLock { $0.committer.pageTable.parents.isEmpty })
        try vault.lock()
        vault = try TestVaults.open(storage)
        defer { try? vault.lock() }
        #expect(try vault.contents(ofFolder: Vault.rootID).map(\.name) == [Self.name(3_000)])
        #expect(try vault.read(try vault.lookup(Vault.rootID, Self.name(3_000)), offset: 0, count: 100) == Array("FILE 3000".utf8))
        let report = try vault.check()
        #expect(report.isClean, "\(report.storageProblems) \(report.damagedItems)")
    }
}
