import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultFormat
import VaultStore

/// Pages on demand (issue 17, step 6c; docs/FORMAT.md §15.7, §15.10): an index-3 vault opened
/// with `loadsOnDemand` reads its root, its interior pages and the few leaves an open needs,
/// the same at 10^4 and 10^5 files; each operation loads the leaves of what it touches, and
/// what it does is what a vault read whole does.
@Suite struct IndexOnDemandTests {
    struct OpenCost: Equatable, CustomStringConvertible {
        var reads = 0, leaves = 0
        var description: String { "\(reads) storage reads, \(leaves) leaves" }
    }

    /// A committed index-3 vault of `files` small files, 1,000 to a folder.
    static func smallFiles(_ files: Int) throws -> SimulatedStorageFolder {
        let storage = try TestVaults.storage()
        let vault = try TestVaults.open(storage, indexThree: true)
        try OneFileCommitScaleTests.makeSmallFiles(files, in: vault)
        try vault.lock()
        return storage
    }

    @Test func anOpenReadsTheSameFewLeavesAtTenAndAHundredThousandFiles() throws {
        var costs: [OpenCost] = []
        for files in [10_000, 100_000] {
            let storage = CountingStorageFolder(try Self.smallFiles(files))
            let vault = try TestVaults.open(storage, indexThree: true, onDemand: true)
            defer { try? vault.lock() }
            let open = OpenCost(reads: storage.current.reads + storage.current.partialReads, leaves: vault.statistics.leafLoads)
            costs.append(open)
            // The root folder's leaf and the writer's file blocks: one leaf at these sizes.
            #expect(open.leaves <= 2, "\(files) files: \(open)")
            // A file's bytes by its path: the folder's leaf, the file's (often the same), its pack.
            storage.reset()
            let folder = try vault.lookup(Vault.rootID, Array("d\(files / 1000 - 3)".utf8))
            let index = files - 2_500
            let file = try vault.lookup(folder, Array("file-\(index)".utf8))
            #expect(try vault.read(file, offset: 0, count: 200) == TestVaults.content(100, seed: UInt64(index)))
            #expect(vault.statistics.leafLoads - open.leaves <= 3, "\(files) files: \(vault.statistics.leafLoads) leaves")
            #expect(throws: VaultError.notFound) { try vault.lookup(folder, Array("file-\(files)".utf8)) }
        }
        #expect(costs[0] == costs[1], "\(costs)")
    }

    /// Random operations on a vault of several leaves, opened in part and whole by turns, with
    /// commits and reopens: the names, types and bytes are the model's, and each open read whole
    /// checks every record of §15.6 against the tree (the records the parts wrote stayed exact).
    /// With a budget (`indexCache`), the same with leaves unloaded between operations and
    /// loaded again by ID: `DOTSAFE_TEST_INDEX_CACHE=1 tools/test-on-demand IndexOnDemand`
    /// (a budget of 1 loads a leaf again at nearly every lookup: some 9 minutes of debug build).
    @Test(arguments: [(UInt64(5), TestVaults.indexCacheEverywhere), (17, TestVaults.indexCacheEverywhere)] as [(UInt64, Int?)])
    func randomOperationsHeldInPartMatchTheModel(seed: UInt64, indexCache: Int?) throws {
        let storage = try TestVaults.storage()
        var generator = SeededGenerator(seed: seed)
        // Path → bytes (nil: a folder); 4 folders of 1,000 files make some 5 leaves.
        var model: [[String]: [UInt8]?] = [[]: nil]
        do {
            let vault = try TestVaults.open(storage, indexThree: true)
            for f in 0..<4 {
                let folder = try vault.create(.folder, in: Vault.rootID, named: Array("f\(f)".utf8), mode: 0o755)
                model[["f\(f)"]] = .some(nil)
                for i in 0..<1_000 {
                    let bytes = TestVaults.content(50 + i % 200, seed: UInt64(f * 1_000 + i))
                    _ = try vault.makeFile("n\(i)", bytes, in: folder)
                    model[["f\(f)", "n\(i)"]] = bytes
                }
            }
            try vault.lock()
        }
        func resolve(_ vault: Vault, _ path: [String]) throws -> UInt64 {
            try path.reduce(Vault.rootID) { try vault.lookup($0, Array($1.utf8)) }
        }
        func check(_ vault: Vault, _ paths: [[String]]) throws {
            for path in paths {
                guard let expected = model[path] else {
                    #expect(throws: VaultError.notFound, "\(path)") { try resolve(vault, path) }
                    continue
                }
                let id = try resolve(vault, path)
                if let bytes = expected {
                    #expect(try vault.read(id, offset: 0, count: 1 << 20) == bytes, "\(path)")
                } else {
                    let names = Set(try vault.contents(ofFolder: id).map { String(decoding: $0.name, as: UTF8.self) })
                    let modelled = Set(model.keys.filter { $0.count == path.count + 1 && Array($0.prefix(path.count)) == path }.map { $0.last! })
                    #expect(names == modelled, "\(path)")
                    let subfolders = model.filter { $0.key.count == path.count + 1 && Array($0.key.prefix(path.count)) == path && $0.value == nil }.count
                    #expect(try vault.attributes(id).linkCount == 2 + subfolders, "\(path)")
                }
            }
        }
        var touched: [[String]] = []
        for round in 0..<6 {
            let inPart = round % 3 != 2
            let vault = try TestVaults.open(storage, indexThree: true, onDemand: inPart, indexCache: indexCache)
            defer { try? vault.lock() }
            // Each open (whole, or by the parts it loads) sees what the model holds.
            try check(vault, touched + [[], ["f0"], ["f3", "n999"]])
            touched = []
            for _ in 0..<40 {
                let folders = model.filter { $0.value == nil }.map(\.key)
                let files = model.filter { $0.value != nil }.map(\.key)
                switch Int.random(in: 0..<6, using: &generator) {
                case 0:
                    let parent = folders.randomElement(using: &generator)!
                    let path = parent + ["new\(Int.random(in: 0..<50, using: &generator))"]
                    guard model[path] == nil else { continue }
                    let bytes = TestVaults.content(Int.random(in: 1..<3, using: &generator) == 1 ? 300_000 : 700, seed: UInt64(round))
                    _ = try vault.makeFile(path.last!, bytes, in: try resolve(vault, parent))
                    model[path] = bytes
                    touched.append(path)
                case 1:
                    let path = files.randomElement(using: &generator)!
                    try vault.remove(Array(path.last!.utf8), from: try resolve(vault, Array(path.dropLast())))
                    model[path] = nil
                    touched.append(path)
                case 2:
                    let from = files.randomElement(using: &generator)!, to = folders.randomElement(using: &generator)! + ["moved\(round)-\(touched.count)"]
                    try vault.rename(Array(from.last!.utf8), in: try resolve(vault, Array(from.dropLast())),
                                     to: Array(to.last!.utf8), in: try resolve(vault, Array(to.dropLast())))
                    model[to] = model[from]!
                    model[from] = nil
                    touched += [from, to]
                case 3:
                    let path = files.randomElement(using: &generator)!
                    let bytes = TestVaults.content(Int.random(in: 1..<400_000, using: &generator), seed: UInt64(touched.count))
                    let id = try resolve(vault, path)
                    try vault.truncate(id, size: 0)
                    try vault.write(id, offset: 0, bytes: bytes)
                    model[path] = bytes
                    touched.append(path)
                case 4:
                    let parent = folders.filter { $0.count < 3 }.randomElement(using: &generator)!
                    let path = parent + ["dir\(round)-\(touched.count)"]
                    _ = try vault.create(.folder, in: try resolve(vault, parent), named: Array(path.last!.utf8), mode: 0o755)
                    model[path] = .some(nil)
                    touched += [path, parent]
                default:
                    // A folder moved under another (the check for a cycle climbs its ancestors).
                    let moving = folders.filter { !$0.isEmpty }.randomElement(using: &generator)!
                    let target = folders.randomElement(using: &generator)!
                    guard !(Array(target.prefix(moving.count)) == moving), target.count < 3 else { continue }
                    let to = target + ["sub\(round)-\(touched.count)"]
                    try vault.rename(Array(moving.last!.utf8), in: try resolve(vault, Array(moving.dropLast())),
                                     to: Array(to.last!.utf8), in: try resolve(vault, target))
                    for (path, value) in model where Array(path.prefix(moving.count)) == moving {
                        model[path] = nil
                        model[to + path.dropFirst(moving.count)] = value
                        touched += [path, to + path.dropFirst(moving.count)]
                    }
                    touched += [Array(moving.dropLast()), target]
                }
            }
            try vault.commit()
            try check(vault, touched)
            if inPart { #expect(vault.statistics.leafLoads > 0) }
            if inPart, let indexCache {
                // After a commit nothing is left to commit: the leaves that may go are within the budget.
                let mayGo = Self.leavesThatMayGo(vault)
                #expect(mayGo <= indexCache, "\(mayGo) leaves loaded besides the kept ones, \(vault.statistics.leafEvictions) evicted")
            }
        }
        // Read whole: every record checked against the tree at the open, and every path.
        let vault = try TestVaults.open(storage, indexThree: true)
        defer { try? vault.lock() }
        try check(vault, Array(model.keys))
        #expect(try vault.check().isClean)
    }

    /// Held in part, an open checks each leaf's own records, not the rules across records
    /// (§15.6: fsck's): an entry that names an item without that link fails that name alone,
    /// as `EIO`, with nothing changed; the item keeps its own name, and fsck reports the rule.
    @Test func anEntryWithoutItsLinkFailsThatNameAlone() throws {
        let (storage, vault, known) = try IndexThreeFsckTests.committed()
        let damage = try #require(IndexThreeFsckTests.cases.first { $0.name == "an entry with no link" })
        var lines: [String] = []
        try IndexThreeFsckTests.rewriteLeaf(vault, storage) { lines = try damage.craft(&$0, known) }
        try vault.lock()
        let damaged = storage.snapshot
        do {
            let inPart = try TestVaults.open(storage, indexThree: true, onDemand: true)
            defer { try? inPart.lock() }
            let names = try inPart.contents(ofFolder: Vault.rootID).map { String(decoding: $0.name, as: UTF8.self) }
            let ghost = try #require(names.first { $0.hasPrefix("ghost-") })
            let item = try #require(known.ids["note-1"])
            let refusal = VaultError.damagedIndex("index 3: folder 1 has an entry for item \(item), which has no such name")
            #expect(throws: refusal) { try inPart.lookup(Vault.rootID, Array(ghost.utf8)) }
            #expect(throws: refusal) { try inPart.remove(Array(ghost.utf8), from: Vault.rootID) }
            #expect(try inPart.lookup(Vault.rootID, Array("note-1".utf8)) == item)
            #expect(throws: VaultError.isAFolder) { try inPart.remove(Array("x".utf8), from: Vault.rootID) }
            let z = try inPart.lookup(try inPart.lookup(try inPart.lookup(Vault.rootID, Array("x".utf8)), Array("y".utf8)), Array("z".utf8))
            #expect(try inPart.read(z, offset: 0, count: 10_000) == TestVaults.content(5_000, seed: 3))
        }
        expectUnchanged(storage, since: damaged, "an open in part that met the damage")
        let looking = try IndexThreeFsckTests.openForFsck(storage, readOnly: true)
        defer { try? looking.lock() }
        #expect(try looking.check().indexProblems == lines)
    }

    /// Loaded leaves besides the kept ones (the root folder's, the file blocks and lists).
    static func leavesThatMayGo(_ vault: Vault) -> Int {
        vault.state.withLock { state in
            state.committer.pageTable.pages.filter { page in
                page.isLoaded && !page.keys.contains { IndexKeyV3.isReserved($0.itemID) || $0.itemID == Vault.rootID }
            }.count
        }
    }

    /// With a budget, a walk of the whole vault keeps about that many leaves: each run over the
    /// budget goes once nothing is left to commit, its items' keys out of the arena, and comes
    /// back by its IDs; every byte reads as written, a commit brings the leaves within the
    /// budget, and what the kernel would hold (a held item) keeps its holds through it.
    @Test func aWalkWithinABudgetUnloadsWhatItLeftBehind() throws {
        let files = 10_000
        let storage = try Self.smallFiles(files)
        let vault = try TestVaults.open(storage, indexThree: true, onDemand: true, indexCache: 2)
        defer { try? vault.lock() }
        let pages = vault.state.withLock { $0.committer.pageTable.pages.count }
        #expect(pages >= 7, "\(pages) leaves")
        let held = try vault.lookup(try vault.lookup(Vault.rootID, Array("d0".utf8)), Array("file-7".utf8))
        vault.hold(held)
        var most = 0
        for folder in try vault.contents(ofFolder: Vault.rootID) {
            for entry in try vault.contents(ofFolder: folder.id) {
                let index = Int(String(decoding: entry.name.dropFirst(5), as: UTF8.self))!
                let id = try vault.lookup(folder.id, entry.name)
                #expect(try vault.read(id, offset: 0, count: 200) == TestVaults.content(100, seed: UInt64(index)))
                most = max(most, vault.state.withLock { $0.loadedLeafCount })
            }
        }
        let statistics = vault.statistics
        // Each leaf loaded about once: the walk goes through the folders in item order.
        #expect(statistics.leafEvictions >= pages - 5 && statistics.leafLoads < 2 * pages, "\(statistics), \(pages) leaves")
        // The kept runs (the root folder's, the file blocks), the budget, and the run a lookup
        // just loaded (a run is a few leaves at most).
        #expect(most <= 3 + 2 + 2, "\(most) leaves loaded at once")
        // The last lookup's run stayed for its call; a commit, with nothing to write, lets it go.
        try vault.commit()
        #expect(Self.leavesThatMayGo(vault) <= 2, "\(Self.leavesThatMayGo(vault)) leaves that may go, after a commit")
        let keys = vault.state.withLock { $0.session.arena.allocatedCount }
        let whole = try vault.state.withLock { state in
            try state.loadWholeIndex()
            return state.session.arena.allocatedCount
        }
        #expect(keys < whole * 3 / 4, "\(keys) keys in the arena, \(whole) with every leaf")
        // The held file's item came back with its hold: its last name going does not delete it.
        try vault.remove(Array("file-7".utf8), from: try vault.lookup(Vault.rootID, Array("d0".utf8)))
        #expect(try vault.read(held, offset: 0, count: 200) == TestVaults.content(100, seed: 7))
        vault.release(held)
        #expect(throws: VaultError.notFound) { try vault.attributes(held) }
    }
}
