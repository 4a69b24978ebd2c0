import VaultFormat

/// Which index page holds which record keys (docs/FORMAT.md §5.2). Records themselves live in
/// the items; a page is re-encoded from them only when one of its keys changed, so a commit
/// costs in proportion to what changed (R-VLT-3).
struct PageTable {
    struct Page {
        /// Where the committed version lies; nil for a page not yet written.
        var ref: StoredRef?
        var keys: [RecordKey]
        var dirty: Bool
    }

    private(set) var pages: [Page] = []
    /// Committed pages that lost their last key: their files are free after the next commit.
    private var dropped: [StoredRef] = []

    init() {}

    /// Pages as read from a root, in key order. `orphaned`: pages read that the next root no
    /// longer lists (format 2's interior pages: the writer lists the leaves in the root).
    init(loaded: [(ref: StoredRef, keys: [RecordKey])], orphaned: [StoredRef] = []) {
        pages = loaded.map { Page(ref: $0.ref, keys: $0.keys, dirty: false) }
        dropped = orphaned
    }

    var isDirty: Bool { !dropped.isEmpty || pages.contains { $0.dirty } }

    /// Marks the page that holds (or will hold) `key` as changed, adding the key if new.
    mutating func touch(_ key: RecordKey) {
        if pages.isEmpty {
            pages.append(Page(ref: nil, keys: [key], dirty: true))
            return
        }
        let p = pageIndex(for: key)
        let (found, position) = search(pages[p].keys, key)
        if !found { pages[p].keys.insert(key, at: position) }
        pages[p].dirty = true
    }

    /// Every page is written again at the next commit (an upgrade: every record changes form).
    mutating func markAllDirty() {
        for i in pages.indices { pages[i].dirty = true }
    }

    mutating func remove(_ key: RecordKey) {
        guard !pages.isEmpty else { return }
        let p = pageIndex(for: key)
        let (found, position) = search(pages[p].keys, key)
        guard found else { return }
        pages[p].keys.remove(at: position)
        pages[p].dirty = true
        // An empty page would break the search by first key: drop it now.
        if pages[p].keys.isEmpty {
            if let ref = pages[p].ref { dropped.append(ref) }
            pages.remove(at: p)
        }
    }

    /// Replaces the dirty pages by the pages they were written as (split when too large,
    /// dropped when empty); returns the refs the dirty pages had, which are now free.
    mutating func replaceDirty(with written: [Int: [(ref: StoredRef, keys: [RecordKey])]]) -> [StoredRef] {
        var replaced = dropped
        dropped = []
        var result: [Page] = []
        for (i, page) in pages.enumerated() {
            guard page.dirty else { result.append(page); continue }
            if let ref = page.ref { replaced.append(ref) }
            for piece in written[i] ?? [] { result.append(Page(ref: piece.ref, keys: piece.keys, dirty: false)) }
        }
        pages = result
        return replaced
    }

    /// The page whose range holds `key`: the last page whose first key is ≤ key.
    private func pageIndex(for key: RecordKey) -> Int {
        var low = 0, high = pages.count
        while low < high {
            let mid = (low + high) / 2
            if pages[mid].keys[0] <= key { low = mid + 1 } else { high = mid }
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
