@testable import VaultCore
import DotSafeTestSupport
import Testing
import VaultFormat
import VaultStore

/// A page table whose leaves are known from their refs and loaded one by one (pages on
/// demand, docs/PERFORMANCE.md plan step 6a): keys go to the leaves a table loaded whole would
/// give them, a commit writes the leaves it changed and lists the others as they were, and a
/// small leaf is joined only to a loaded neighbour.
@Suite struct PageTableLoadTests {
    /// Records of 2,000 bytes: about 130 a leaf.
    static let cost: @Sendable (RecordKey) -> Int = { _ in 2_000 }

    /// A committed table of items 2 … 4,001 with a chunk-map segment on every tenth: some 30
    /// leaves, each with its keys; and the same leaves listed only, none loaded.
    static func tables() -> (whole: PageTable, listed: PageTable) {
        var table = PageTable(), files: UInt64 = 0
        table.touch((2..<4_002).flatMap { id in id % 10 == 0 ? [RecordKey.item(id), .segment(id, 0), .segment(id, 1)] : [.item(id)] })
        IndexLevelsTests.commit(&table, .standard, cost: cost, files: &files)
        return (table, PageTable(listed: table.top.refs))
    }

    @Test func keysGoToTheLeavesOfTheWholeTable() {
        let (whole, listed) = Self.tables()
        #expect(whole.pages.count > 20 && listed.pages.allSatisfy { !$0.isLoaded })
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<2_000 {
            let key = RecordKey(itemID: UInt64.random(in: 0..<4_100, using: &generator), sub: UInt32.random(in: 0..<3, using: &generator))
            #expect(listed.leaf(for: key) == whole.leaf(for: key), "\(key)")
        }
        // An item's range: every key of it lies in the leaves given, and each of those holds
        // one of its keys or is the leaf where the range begins.
        for id in UInt64(2)..<4_002 {
            let range = listed.leaves(from: .item(id), below: .item(id + 1))!
            let keys = whole.pages.indices.filter { whole.pages[$0].keys.contains { $0.itemID == id } }
            #expect(keys.allSatisfy(range.contains), "item \(id): \(range) for \(keys)")
            #expect(range.count <= keys.count + 1, "item \(id): \(range) for \(keys)")
        }
    }

    @Test func aCommitListsTheLeavesItDidNotLoadAsTheyWere() {
        var (whole, listed) = Self.tables()
        let before = listed.top.refs
        let changed = listed.leaf(for: .item(2_000))!
        listed.load(changed, keys: whole.pages[changed].keys)
        listed.touch(.item(2_000))
        listed.touch(.segment(2_000, 5))
        var files: UInt64 = 1_000_000
        IndexLevelsTests.commit(&listed, .standard, cost: Self.cost, files: &files)
        // The leaf was full (items made in order): cut in two, both new; the rest as listed.
        let after = listed.top.refs
        let written = after.filter { $0.ref.fileNumber > 1_000_000 }
        #expect(written.count == 2 && written[0].firstKey == before[changed].firstKey)
        let kept = after.filter { $0.ref.fileNumber <= 1_000_000 }
        var others = before
        others.remove(at: changed)
        #expect(kept.map(\.firstKey) == others.map(\.firstKey) && kept.map(\.ref.fileNumber) == others.map(\.ref.fileNumber))
        #expect((listed.pages[changed].keys + listed.pages[changed + 1].keys).contains(.segment(2_000, 5)))
        #expect(listed.pages.indices.filter { listed.pages[$0].isLoaded } == [changed, changed + 1])
        // The whole table, changed alike, holds the same keys in the same leaves.
        whole.touch(.segment(2_000, 5))
        IndexLevelsTests.commit(&whole, .standard, cost: Self.cost, files: &files)
        #expect(whole.pages.map(\.firstKey) == listed.pages.map(\.firstKey))
    }

    @Test func aSmallLeafJoinsOnlyALoadedNeighbour() {
        let (whole, start) = Self.tables()
        var listed = start, files: UInt64 = 1_000_000
        let small = 10
        listed.load(small, keys: whole.pages[small].keys)
        for key in whole.pages[small].keys.dropFirst(3) { listed.remove(key) }
        IndexLevelsTests.commit(&listed, .standard, cost: Self.cost, files: &files)
        #expect(listed.pages.count == whole.pages.count, "not joined to the leaf after it, not loaded")
        #expect(listed.pages[small].keys.count == 3)

        // The leaf after it loaded, and small too (a full one could not take it in).
        listed.load(small + 1, keys: whole.pages[small + 1].keys)
        for key in whole.pages[small + 1].keys.dropFirst(3) { listed.remove(key) }
        listed.touch(listed.pages[small].keys[0])
        IndexLevelsTests.commit(&listed, .standard, cost: Self.cost, files: &files)
        #expect(listed.pages.count == whole.pages.count - 1, "joined to the loaded leaf after it")
        #expect(listed.pages[small].keys == Array(whole.pages[small].keys.prefix(3) + whole.pages[small + 1].keys.prefix(3)))
    }

    @Test func aKeyTouchedInALeafNotLoadedStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            var (_, listed) = PageTableLoadTests.tables()
            listed.touch(.item(2_000))
        }
    }
}
