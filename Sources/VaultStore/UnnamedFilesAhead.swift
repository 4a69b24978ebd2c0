import Dispatch
import Glibc
import Synchronization

/// Empty unnamed files (`O_TMPFILE`, direct I/O) opened on a thread of their own before the
/// write-behind asks for them. Opening one makes an inode, and on ext4 right after many removals
/// its allocator searches for one at length (`find_inode_bit`, `recently_deleted`): on the
/// write-behind's path that search held the writers back (docs/PERFORMANCE.md, "Unnamed files
/// opened ahead"). An empty unnamed file is in no folder listing and holds no block; a crash
/// or the process's end takes it with it.
///
/// Filling starts at the first `take`, so a vault that never writes a new group opens none.
final class UnnamedFilesAhead: Sendable {
    private let folder: Int32
    private let depth: Int
    private let state = Mutex(State())
    private let filler = DispatchQueue(label: "dotsafe.unnamed-ahead")

    private struct State {
        var ready: [Int32] = []
        var filling = false
        /// The folder refused one: it has no unnamed direct files (or no inode left); callers
        /// open their own, which say why.
        var refused = false
        var closed = false
    }

    /// Keeps up to `depth` files ready in `folder`, which the caller keeps open until `close`.
    init(folder: Int32, depth: Int) {
        self.folder = folder
        self.depth = depth
    }

    /// A file opened ahead, or nil (none ready yet, or the folder refuses them): the caller opens
    /// its own. Each take starts a filling back up to the depth, unless one runs.
    func take() -> Int32? {
        let (file, fill) = state.withLock { state -> (Int32?, Bool) in
            let file = state.ready.popLast()
            let fill = !state.filling && !state.refused && !state.closed
            if fill { state.filling = true }
            return (file, fill)
        }
        if fill { filler.async { self.fill() } }
        return file
    }

    /// Closes the files kept ready (a quiet daemon); the next `take` starts again.
    func drop() {
        let files = state.withLock { state in defer { state.ready = [] }; return state.ready }
        files.forEach(Syscalls.close)
    }

    /// Closes every file; returns once no filling runs, so the folder may close after it.
    func close() {
        state.withLock { $0.closed = true }
        filler.sync {}
        drop()
    }

    private func fill() {
        while true {
            let wanted = state.withLock { state in
                let wanted = !state.closed && state.ready.count < depth
                if !wanted { state.filling = false }
                return wanted
            }
            guard wanted else { return }
            guard let file = DirectIO.openUnnamed(folder) else {
                state.withLock { state in state.refused = true; state.filling = false }
                return
            }
            state.withLock { $0.ready.append(file) }
        }
    }
}
