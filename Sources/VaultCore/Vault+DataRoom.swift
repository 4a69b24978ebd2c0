import VaultStore

/// What a request whose data waits for free files does next (`Vault.settleData`).
enum DataRoomStep: Sendable {
    /// Nothing of it waits.
    case done
    /// Free files were there: its data went on; these write-behinds to run, these chunks still wait.
    case resumed([WriteBehindJob], waiting: Range<Int>)
    /// Make this group, outside the lock.
    case make(GroupWrite)
    /// No group could be made (its own failed: a full disk).
    case failed(evictionWaits: Bool)
}

/// A request never makes a storage group under the vault's lock: making 16 files there held up
/// every other request of the mount (seen with gdb: a chunk write's allocation under the lock,
/// creating a group). Data that finds the free files down to the reserve (`FileWriter`) waits
/// in the cache, dirty; the request that left it makes a group after its locked part, with the
/// lock released, then lets its data go on under the lock. It does not wait for a group made
/// ahead of need by a write-behind, which may be slow to get going; the group not needed then
/// is released at a commit (FORMAT.md §9.2). A group is made as under the lock (§9.2 step 1):
/// 16 complete files at their final names, numbers above the committed root's, so a crash
/// before they are used leaves files the next open removes (§9.3).
extension Vault {
    /// Goes on with what a data request left waiting for free files: write-behinds of chunks
    /// `waiting` of `id`, and an eviction put off. When its own group cannot be made (a full
    /// disk), chunks not written behind stay dirty for the commit to write and report, and an
    /// eviction put off fails the request with the group's error (ENOSPC), as an eviction that
    /// cannot store does.
    func settleData(writesOf id: UInt64? = nil, waiting: Range<Int> = 0..<0) throws {
        var waiting = id == nil ? 0..<0 : waiting
        var failure: (any Error)?
        while true {
            let step = try locked { state in
                try state.onDataPath { state -> DataRoomStep in
                    let evictionWaits = state.evictionWaitsForGroup
                    guard !waiting.isEmpty || evictionWaits else { return .done }
                    if state.writer.mayTakeData {
                        try state.evictIfNeeded()
                        guard let id else { return .resumed([], waiting: 0..<0) }
                        let (jobs, left) = state.startWritesBehind(id, waiting)
                        return .resumed(jobs, waiting: left)
                    }
                    guard failure == nil, let group = state.writer.startGroupWrite(needed: true) else {
                        return .failed(evictionWaits: evictionWaits)
                    }
                    // Counted as a write-behind from here: a commit waits for it.
                    writeBehind.begin()
                    return .make(group)
                }
            }
            switch step {
            case .done:
                return
            case .resumed(let jobs, let left):
                submit(jobs)
                waiting = left
            case .make(let group):
                let outcome = group.run(storage)
                state.withLock { $0.finishGroupWrite(group, outcome) }
                writeBehind.end()
                failure = outcome.failure
            case .failed(let evictionWaits):
                if evictionWaits { throw VaultError.wrap(failure ?? StoreError.noSpace) }
                return
            }
        }
    }
}
