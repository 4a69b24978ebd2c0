import VaultFormat

/// Pages on demand, eviction (issue 17, step 6e): with a budget of leaves, the least recently
/// used runs of leaves go between operations once the vault has no change left to commit,
/// their items, names and keys out of memory; an item comes back by its ID (`fault`). What
/// stays: the root folder's run, and the writer's file blocks and member lists (every commit
/// and allocation reads them).
extension VaultState {
    /// Leaves loaded now.
    var loadedLeafCount: Int { committer.pageTable.pages.reduce(0) { $0 + ($1.isLoaded ? 1 : 0) } }

    /// Marks the leaves of item `id` used now.
    mutating func noteUse(_ id: UInt64) {
        guard let range = committer.pageTable.leaves(from: .item(id), below: .item(id &+ 1)) else { return }
        leafClock += 1
        committer.useLeaves(range, tick: leafClock)
    }

    /// Unloads the least recently used runs, when the runs that may go hold more leaves than
    /// the budget and nothing is waiting to be committed, loaded or written. The kept runs (the
    /// root folder's, the file blocks and member lists) are not counted: a budget is what a walk
    /// may hold besides them. `keepingUsedAfter`: runs the operation just used stay, though over
    /// the budget (a folder's run and its item's together may be more than the budget: evicting
    /// one would load it again at the next lookup).
    ///
    /// The look goes over every loaded key, so it comes once per `slack` leaves loaded, not at
    /// every call (at every lookup it took a walk of 10^6 files from seconds to many minutes),
    /// and unloads down to the budget less that slack: between two looks the loads stay within
    /// the budget. A commit (`always`) looks whatever was loaded: the runs the last look kept
    /// for its call may go now.
    mutating func evictLeavesOverBudget(keepingUsedAfter start: UInt64? = nil, always: Bool = false) {
        let start = start ?? leafClock
        guard let budget = leafBudget, leafSource != nil, !isLocked else { return }
        let slack = budget / 4
        guard always || statistics.leafLoads - leafLoadsAtEviction >= max(1, slack) else { return }
        let pages = committer.pageTable.pages
        guard pages.count > budget, !hasChanges, !writingBehind, !chunks.isLoading, syncBases.pending == nil else { return }
        leafLoadsAtEviction = statistics.leafLoads
        var runs: [ClosedRange<Int>] = [], loaded = 0
        var i = 0
        while i < pages.count {
            var last = i
            while last + 1 < pages.count && Self.startsWithinItem(pages[last + 1]) { last += 1 }
            if pages[i].isLoaded && pages[i...last].allSatisfy({ $0.lastUse <= start }) && isEvictable(i...last) {
                runs.append(i...last)
                loaded += last - i + 1
            }
            i = last + 1
        }
        guard loaded > budget - slack else { return }
        runs.sort { a, b in pages[a].map(\.lastUse).max()! < pages[b].map(\.lastUse).max()! }
        for run in runs where loaded > budget - slack {
            evict(run)
            loaded -= run.count
        }
    }

    /// Whether a loaded run may go: none of the kept kinds of record. (With nothing left to
    /// commit, a leaf holds named items only: an item without a name, an open file's, has no
    /// record on any leaf and stays in the tree, whatever leaves go.)
    private func isEvictable(_ run: ClosedRange<Int>) -> Bool {
        for i in run {
            let page = committer.pageTable.pages[i]
            guard page.isLoaded, !page.dirty, page.ref != nil else { return false }
            if page.keys.contains(where: { IndexKeyV3.isReserved($0.itemID) || $0.itemID == Format.rootItemID }) { return false }
        }
        return true
    }

    /// Unloads one run: its items (their keys freed), their folders' derived records, its leaves.
    private mutating func evict(_ run: ClosedRange<Int>) {
        var ids: [UInt64] = []
        for i in run { for key in committer.pageTable.pages[i].keys where key.sub == 0 { ids.append(key.itemID) } }
        for item in tree.evict(ids) { item.keySlots.forEach(session.arena.free) }
        committer.indexThree?.forgetFolders(ids)
        for i in run { committer.unloadLeaf(i) }
        statistics.leafEvictions += run.count
    }
}
