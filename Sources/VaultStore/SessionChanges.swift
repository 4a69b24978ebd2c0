/// What one session changed in the storage folder, for the lock's times (docs/FORMAT.md §11.2):
/// every file it wrote, created or was told a download rewrites, each with the latest
/// modification time the file had just before one of the session's changes; and the names it
/// removed, with their last time, which a file made again at such a name must pass. A copy
/// tool may have seen any of those times, and compares whole seconds.
struct SessionChanges {
    private(set) var written: [String: Int64] = [:]
    private var removed: [String: Int64] = [:]

    var isEmpty: Bool { written.isEmpty }

    /// `name` is about to change; `time` is its modification time now (0 for a new file).
    mutating func change(_ name: String, before time: Int64) {
        written[name] = max(written[name] ?? 0, time, removed.removeValue(forKey: name) ?? 0)
    }

    /// `name`, whose modification time was `time`, is gone.
    mutating func remove(_ name: String, time: Int64) {
        removed[name] = max(time, written.removeValue(forKey: name) ?? 0)
    }

    /// `name` moved to `newName` (which held nothing): the copy saw its bytes under `name`.
    mutating func rename(_ name: String, time: Int64, to newName: String) {
        let carried = written[name] ?? 0
        remove(name, time: time)
        change(newName, before: carried)
    }
}
