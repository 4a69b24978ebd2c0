import VaultFormat

/// Which index page holds which record keys (docs/FORMAT.md §5.2). Records themselves live in
/// the items; a page is re-encoded from them only when one of its keys changed, so a commit
/// costs in proportion to what changed (R-VLT-3).
struct PageTable {
    struct Page {
        /// Where the committed version lies; nil for a page not yet written.
        var ref: StoredRef?
        /// Its keys; none while it is not loaded (`isLoaded`).
        var keys: [RecordKey]
        var dirty: Bool
        /// A key was added below the page's last since it was written: when it outgrows its
        /// body it is cut in halves, not full (`pieces`).
        var insertedInside = false
        /// A leaf known only from its parent's ref (pages on demand, index 3): the first key
        /// the ref lists, which routes keys to it until it is loaded.
        var listedFirstKey: RecordKey?
        /// When a loaded leaf was last used (`use`): the least recently used go first.
        var lastUse: UInt64 = 0

        init(ref: StoredRef?, keys: [RecordKey], dirty: Bool) {
            self.ref = ref
            self.keys = keys
            self.dirty = dirty
        }

        var isLoaded: Bool { listedFirstKey == nil }
        /// Keys from this one up to the next page's first key are this page's.
        var firstKey: RecordKey { listedFirstKey ?? keys[0] }
    }

    /// Format 2's level-1 page over a run of consecutive leaves (§13.5), once the leaves do not
    /// fit in the root; rewritten when one of its leaves is.
    struct Parent {
        var ref: StoredRef?
        /// How many leaves of `pages`, after those of the parents before it.
        var count: Int
        var dirty: Bool
    }

    private(set) var pages: [Page] = []
    /// Empty while the root lists the leaves themselves.
    private(set) var parents: [Parent] = []
    /// Committed pages that lost their last key: their files are free after the next commit.
    private var dropped: [StoredRef] = []

    init() {}

    /// Pages as read from a root, in key order, with the level-1 pages above them when the root
    /// lists those. `orphaned`: interior pages read that the next root no longer lists (levels
    /// above 1, which this writer folds into one).
    init(loaded: [(ref: StoredRef, keys: [RecordKey])], parents loadedParents: [(ref: StoredRef, count: Int)] = [],
         orphaned: [StoredRef] = []) {
        pages = loaded.map { Page(ref: $0.ref, keys: $0.keys, dirty: false) }
        parents = loadedParents.map { Parent(ref: $0.ref, count: $0.count, dirty: false) }
        dropped = orphaned
    }

    /// Leaves known from their refs only, none loaded (`load` gives each its keys), with the
    /// level-1 pages above them when the root lists those.
    init(listed: [(firstKey: RecordKey, ref: StoredRef)], parents loadedParents: [(ref: StoredRef, count: Int)] = [],
         orphaned: [StoredRef] = []) {
        pages = listed.map { leaf in
            var page = Page(ref: leaf.ref, keys: [], dirty: false)
            page.listedFirstKey = leaf.firstKey
            return page
        }
        parents = loadedParents.map { Parent(ref: $0.ref, count: $0.count, dirty: false) }
        dropped = orphaned
    }

    /// The leaf at `index` was read: its keys, in order (the first at or above the key its
    /// ref listed, the last below the next leaf's first).
    mutating func load(_ index: Int, keys: [RecordKey]) {
        precondition(!pages[index].isLoaded && !keys.isEmpty, "a leaf loaded twice, or empty")
        pages[index].keys = keys
        pages[index].listedFirstKey = nil
    }

    /// A clean leaf goes back to being known by its first key (pages on demand, eviction).
    mutating func unload(_ index: Int) {
        precondition(pages[index].isLoaded && !pages[index].dirty && pages[index].ref != nil, "a leaf unloaded dirty")
        pages[index].listedFirstKey = pages[index].keys[0]
        pages[index].keys = []
    }

    /// Leaves `range` were used at `tick`.
    mutating func use(_ range: ClosedRange<Int>, tick: UInt64) {
        for i in range { pages[i].lastUse = tick }
    }

    /// The leaves whose ranges meet keys `lower` up to, not including, `upper`: those to load
    /// before looking at or changing any key there.
    func leaves(from lower: RecordKey, below upper: RecordKey) -> ClosedRange<Int>? {
        guard !pages.isEmpty, lower < upper else { return nil }
        return pageIndex(for: lower)...pageIndex(for: upper, below: true)
    }

    /// The leaf that holds, or would hold, `key`.
    func leaf(for key: RecordKey) -> Int? { pages.isEmpty ? nil : pageIndex(for: key) }

    /// The pages of an index just read (its level-1 pages kept, higher levels to be folded).
    init(loaded contents: IndexContents) {
        self.init(loaded: contents.pages, parents: contents.parents, orphaned: contents.parents.isEmpty ? contents.interiorPages : [])
    }

    var isDirty: Bool { !dropped.isEmpty || pages.contains { $0.dirty } || parents.contains { $0.dirty } }

    /// Marks the page that holds (or will hold) `key` as changed, adding the key if new.
    mutating func touch(_ key: RecordKey) {
        if pages.isEmpty {
            pages.append(Page(ref: nil, keys: [key], dirty: true))
            return
        }
        let p = pageIndex(for: key)
        precondition(pages[p].isLoaded, "a key touched in a leaf not loaded")
        let (found, position) = search(pages[p].keys, key)
        if !found {
            if position < pages[p].keys.count { pages[p].insertedInside = true }
            pages[p].keys.insert(key, at: position)
        }
        pages[p].dirty = true
    }

    /// `touch` for many keys at once: grouped by page, each page's keys merged once. (One at a
    /// time, keys in random order move a leaf's keys for each: quadratic in a new vault's first
    /// commit, whose keys all go into one leaf, and in a conversion.) A leaf's keys count as
    /// added inside it when a new key is below its last, as they would in key order.
    mutating func touch(_ keys: [RecordKey]) {
        guard keys.count > 1 else {
            if let key = keys.first { touch(key) }
            return
        }
        if pages.isEmpty {
            pages.append(Page(ref: nil, keys: Set(keys).sorted(), dirty: true))
            return
        }
        var byPage: [Int: [RecordKey]] = [:]
        for key in keys { byPage[pageIndex(for: key), default: []].append(key) }
        for (p, added) in byPage {
            precondition(pages[p].isLoaded, "keys touched in a leaf not loaded")
            let old = pages[p].keys
            var merged: [RecordKey] = [], i = 0, inside = false
            merged.reserveCapacity(old.count + added.count)
            for key in Set(added).sorted() {
                while i < old.count && old[i] < key {
                    merged.append(old[i])
                    i += 1
                }
                if i < old.count && old[i] == key { continue }
                if i < old.count { inside = true }
                merged.append(key)
            }
            merged.append(contentsOf: old[i...])
            pages[p].keys = merged
            if inside { pages[p].insertedInside = true }
            pages[p].dirty = true
        }
    }

    /// One write of `writeDirtyPages`: the records of leaves `first...last` (a changed leaf and
    /// the small ones joined to it) as pages, cut at `pieces` (ranges of those records).
    struct Write {
        let first: Int
        let last: Int
        let pieces: [Range<Int>]
    }

    /// How the first changed leaf from `start` on is written, from the bytes each record takes
    /// (`costs` of a leaf, in key order), no page above `limit`; nil when no leaf from `start`
    /// on changed. A leaf that fits is one page; one that does not
    /// is cut full when keys were only added at its end (items made one after the other fill
    /// pages), else in pieces of nearly equal size, so that keys added in random order leave
    /// no pages of one record. `joinsSmall` (format 2): a changed leaf below a quarter of
    /// `limit` takes in the leaves after it while it stays below that and they fit (docs/FORMAT.md
    /// §13.5, "Writing the levels"); those are marked changed. Across parents too: a leaf joined
    /// only under its own parent leaves one leaf a parent at least, and parents that outnumber
    /// half the root's room then keep the level however few records are left.
    mutating func nextWrite(from start: Int, limit: Int, joinsSmall: Bool,
                            costs: (_ leaf: Int, _ keys: [RecordKey]) -> [Int]) -> Write? {
        guard let i = pages[start...].firstIndex(where: \.dirty) else { return nil }
        precondition(pages[i].isLoaded, "a leaf written that was not loaded")
        var recordCosts = costs(i, pages[i].keys), size = recordCosts.reduce(0, +), last = i
        // A leaf not loaded is not joined: its records are not at hand (a reader accepts any split).
        while joinsSmall && size < limit / 4 && last + 1 < pages.count && pages[last + 1].isLoaded {
            let next = costs(last + 1, pages[last + 1].keys), nextSize = next.reduce(0, +)
            guard size + nextSize <= limit else { break }
            recordCosts += next
            size += nextSize
            last += 1
            pages[last].dirty = true
        }
        return Write(first: i, last: last, pieces: Self.pieces(recordCosts, total: size, limit: limit,
                                                               halves: joinsSmall && pages[i].insertedInside))
    }

    private static func pieces(_ costs: [Int], total: Int, limit: Int, halves: Bool) -> [Range<Int>] {
        guard total > limit else { return [0..<costs.count] }
        let target = halves ? (total + 1) / max(2, (total + limit - 1) / limit) : limit
        var pieces: [Range<Int>] = []
        var start = 0, size = 0
        for (index, cost) in costs.enumerated() {
            if index > start && (size + cost > limit || size >= target) {
                pieces.append(start..<index)
                start = index
                size = 0
            }
            size += cost
        }
        pieces.append(start..<costs.count)
        return pieces
    }

    /// Every page is written again at the next commit (an upgrade: every record changes form).
    mutating func markAllDirty() {
        for i in pages.indices { pages[i].dirty = true }
        for i in parents.indices { parents[i].dirty = true }
    }

    mutating func remove(_ key: RecordKey) {
        guard !pages.isEmpty else { return }
        let p = pageIndex(for: key)
        precondition(pages[p].isLoaded, "a key removed from a leaf not loaded")
        let (found, position) = search(pages[p].keys, key)
        guard found else { return }
        pages[p].keys.remove(at: position)
        pages[p].dirty = true
        // An empty page would break the search by first key: drop it now.
        if pages[p].keys.isEmpty {
            if let ref = pages[p].ref { dropped.append(ref) }
            pages.remove(at: p)
            leafRemoved(at: p)
        }
    }

    /// Replaces the dirty pages by the pages they were written as (split when too large,
    /// dropped when empty); returns the refs the dirty pages had, which are now free.
    mutating func replaceDirty(with written: [Int: [(ref: StoredRef, keys: [RecordKey])]]) -> [StoredRef] {
        var replaced = dropped
        dropped = []
        var result: [Page] = []
        var parent = 0, leftInParent = parents.first?.count ?? 0
        for (i, page) in pages.enumerated() {
            while !parents.isEmpty && leftInParent == 0 {
                parent += 1
                leftInParent = parents[parent].count
            }
            leftInParent -= 1
            guard page.dirty else { result.append(page); continue }
            if let ref = page.ref { replaced.append(ref) }
            let pieces = written[i] ?? []
            for piece in pieces { result.append(Page(ref: piece.ref, keys: piece.keys, dirty: false)) }
            if !parents.isEmpty {
                parents[parent].count += pieces.count - 1
                parents[parent].dirty = true
            }
        }
        pages = result
        replaced += removeEmptyParents()
        return replaced
    }

    /// The page whose range holds `key`: the last page whose first key is ≤ key (`below`:
    /// < key, the page that holds the keys just below it).
    private func pageIndex(for key: RecordKey, below: Bool = false) -> Int {
        var low = 0, high = pages.count
        while low < high {
            let mid = (low + high) / 2
            if below ? pages[mid].firstKey < key : pages[mid].firstKey <= key { low = mid + 1 } else { high = mid }
        }
        return max(0, low - 1)
    }

    private func search(_ keys: [RecordKey], _ key: RecordKey) -> (found: Bool, position: Int) {
        var low = 0, high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return (low < keys.count && keys[low] == key, low)
    }
}

/// Format 2's interior level (docs/FORMAT.md §13.5): once the leaves outgrow the root, level-1
/// pages over runs of consecutive leaves, each rewritten only when one of its leaves is, so that
/// a commit writes a changed leaf, its parent and the root however large the index.
extension PageTable {
    /// How many refs the root and an interior page hold. The root's room is kept below its
    /// whole body (about 5,000 refs) for the device table and the extensions beside it.
    struct FanOut: Sendable {
        var root: Int
        var interior: Int

        static let standard = FanOut(root: 4_000, interior: (Format.payloadSize - IndexPageV2.headerSize) / PageRef.size)
    }

    /// What the root lists: its level and, for each ref, the first key and the page.
    var top: (level: UInt8, refs: [(firstKey: RecordKey, ref: StoredRef)]) {
        guard !parents.isEmpty else { return (0, pages.map { ($0.firstKey, $0.ref!) }) }
        var first = 0
        return (1, parents.map { parent in
            defer { first += parent.count }
            return (pages[first].firstKey, parent.ref!)
        })
    }

    /// Every interior page the table holds (their files are the index's, as the leaves' are).
    var parentRefs: [StoredRef] { parents.compactMap(\.ref) }

    /// After a leaf at `index` went: its parent counts one less, and goes when it has none.
    mutating func leafRemoved(at index: Int) {
        guard let p = parentIndex(ofLeaf: index) else { return }
        parents[p].count -= 1
        parents[p].dirty = true
        if parents[p].count == 0 {
            if let ref = parents[p].ref { dropped.append(ref) }
            parents.remove(at: p)
        }
    }

    /// Parents left with no leaf by a rewrite: gone, their refs returned.
    mutating func removeEmptyParents() -> [StoredRef] {
        let empty = parents.filter { $0.count == 0 }.compactMap(\.ref)
        parents.removeAll { $0.count == 0 }
        return empty
    }

    /// Shapes the level above the leaves for the next root: none while the leaves fit in the
    /// root (until they fall to half of it, so that a vault near the bound does not switch at
    /// every commit), else parents of at most `fanOut.interior` leaves, a full one cut in
    /// halves, a changed one joined with its neighbour while both together hold at most half
    /// (so that parents emptied by removals do not pile up in the root, which has room for
    /// `fanOut.root` of them only). Returns the parents' refs that are now free.
    mutating func arrangeParents(_ fanOut: FanOut) -> [StoredRef] {
        if parents.isEmpty {
            guard pages.count > fanOut.root else { return [] }
            // New parents three quarters full leave room for the leaves below them to split.
            parents = Self.runs(of: pages.count, atMost: max(1, fanOut.interior * 3 / 4)).map { Parent(ref: nil, count: $0, dirty: true) }
            return []
        }
        if pages.count <= fanOut.root / 2 {
            defer { parents = [] }
            return parentRefs
        }
        var freed: [StoredRef] = []
        var result: [Parent] = []
        for parent in parents {
            guard parent.count > fanOut.interior else { result.append(parent); continue }
            if let ref = parent.ref { freed.append(ref) }
            let pieces = max(2, (parent.count + fanOut.interior - 1) / fanOut.interior)
            result += Self.runs(of: parent.count, atMost: (parent.count + pieces - 1) / pieces).map { Parent(ref: nil, count: $0, dirty: true) }
        }
        parents = result
        return freed + joinSmallParents(atMost: fanOut.interior / 2)
    }

    /// Each changed parent joined with the one before it, or after it, while both together
    /// list at most `size` leaves; returns the refs of the parents joined into another.
    private mutating func joinSmallParents(atMost size: Int) -> [StoredRef] {
        var freed: [StoredRef] = []
        var result: [Parent] = []
        for parent in parents {
            if var previous = result.last, previous.dirty || parent.dirty, previous.count + parent.count <= size {
                if let ref = parent.ref { freed.append(ref) }
                previous.count += parent.count
                previous.dirty = true
                result[result.count - 1] = previous
            } else {
                result.append(parent)
            }
        }
        parents = result
        return freed
    }

    /// The parents to write, each with the leaves below it, in key order.
    var dirtyParents: [(index: Int, children: [(firstKey: RecordKey, ref: StoredRef)])] {
        var first = 0
        var result: [(index: Int, children: [(firstKey: RecordKey, ref: StoredRef)])] = []
        for (index, parent) in parents.enumerated() {
            defer { first += parent.count }
            guard parent.dirty else { continue }
            result.append((index, pages[first..<first + parent.count].map { ($0.firstKey, $0.ref!) }))
        }
        return result
    }

    /// A parent written at `ref`; returns the ref it replaces, now free.
    mutating func parentWritten(_ index: Int, at ref: StoredRef) -> StoredRef? {
        defer { parents[index].ref = ref; parents[index].dirty = false }
        return parents[index].ref
    }

    /// `count` split into runs of at most `size`, as equal as can be.
    private static func runs(of count: Int, atMost size: Int) -> [Int] {
        let n = (count + size - 1) / size
        return (0..<n).map { count / n + ($0 < count % n ? 1 : 0) }
    }

    /// The parent above the leaf at `index` (by the parents' counts, which may still count a
    /// leaf just removed from `pages`).
    private func parentIndex(ofLeaf index: Int) -> Int? {
        var first = 0
        for (p, parent) in parents.enumerated() {
            if index < first + parent.count { return p }
            first += parent.count
        }
        return nil
    }
}
