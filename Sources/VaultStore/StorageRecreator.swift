import Glibc
import VaultCrypto
import VaultFormat

/// Re-creates storage files with identical bytes, so that birth time, change time, inode number
/// and listing position stop recording who made a file when (docs/FORMAT.md §11, R-DEN-1). It
/// takes part for every file of the storage, whoever owns it: it needs no key, and the bytes
/// never change (the one exception to R-SEC-4 and R-BLK-5).
///
/// Crash-safe by construction, in batches (`StorageRecreator+Batch.swift`): each file is copied
/// to a name not of the storage's form (no vault counts or touches it), without holding the
/// folder; the batch's copies are made durable with one `syncfs`; then, under an exclusive flock
/// of the folder (writers hold it shared), each copy whose original still holds the bytes copied
/// is swapped in, and the folder is synced. At every instant NAME holds its bytes and the count
/// of storage files is unchanged; a crash leaves at most files under the temporary name, which
/// `removeLeftovers` finds by their form. The files a batch replaced take the next batch's
/// copies, so that a lock neither creates nor frees a file past its first and last batch; but
/// for a replaced file in more than one piece, which is removed (its layout would live on).
public final class StorageRecreator {
    public static let temporarySuffix = ".recreated"
    /// Files per batch (32 MiB, held in memory for the check): each batch costs one `syncfs`
    /// (on a busy disk it waits for everyone's dirty data); the first batch's copies are new
    /// files and the last one's replaced files are freed.
    public static let batchSize = 128
    let folder: Int32
    private let batchSize: Int
    /// Files the last batch replaced, open for writing, each under a temporary name: the next
    /// batch writes its copies into them.
    var spares: [Spare] = []

    public init(path: String, batchSize: Int = StorageRecreator.batchSize) throws {
        folder = try Syscalls.openFolder(path)
        self.batchSize = batchSize
    }

    /// A separate open of the folder: its flock must not be the writers' (`SharedFolderLock`).
    init(folder: Int32) throws {
        self.folder = try Syscalls.reopenFolder(folder)
        batchSize = Self.batchSize
    }

    deinit {
        for spare in spares { Syscalls.close(spare.fd) }
        Syscalls.close(folder)
    }

    /// What a re-creation did.
    public struct Summary: Equatable, Sendable {
        /// Storage files re-created, and how many of them the session had written.
        public var recreated = 0, written = 0
        /// Storage files in the folder, and the share of the others that was re-created.
        public var files = 0
        public var seconds = 0.0
    }

    /// Copies a re-creation cut short left behind; removes them, under the exclusive lock (so
    /// that another process's re-creation in progress keeps its copies). Returns how many.
    @discardableResult
    public func removeLeftovers() throws -> Int {
        try Syscalls.lockFolder(folder, exclusive: true)
        defer { Syscalls.unlockFolder(folder) }
        return try removeLeftoversLocked()
    }

    private func removeLeftoversLocked() throws -> Int {
        let leftovers = try Syscalls.listNames(folder).filter(Self.isTemporary)
        for name in leftovers { try Syscalls.unlink(folder, name) }
        if !leftovers.isEmpty { try Syscalls.fsync(folder) }
        return leftovers.count
    }

    public static func isTemporary(_ name: String) -> Bool {
        name.hasSuffix(temporarySuffix) && FileName.isWellFormed(String(name.dropLast(temporarySuffix.count)))
    }

    /// The re-creation at lock (§11.2–§11.3): every file of `written` and a random share of all
    /// the other storage files, in one random order; the share shrinks as the budget runs out,
    /// the written files are always re-created. Every file gets the lock's time (`LockTime`):
    /// its batch's, but never in or before the second of a time of `earlierTimes` (each
    /// written file's latest time before the session changed it) and never earlier than a
    /// re-created file's own. A written file that cannot be re-created still gets that time.
    public func recreateAtLock(written: Set<String>, earlierTimes: [String: Int64] = [:], budget: RecreationBudget,
                               random: any RandomSource) throws -> Summary {
        let start = Syscalls.now()
        try removeLeftovers()
        let files = try storageFiles()
        let seconds = budget.seconds(forFiles: files.count)
        let deadline = start + Int64(seconds * 1e9)
        var order = try Self.choose(share: seconds > 0 ? budget.share : 0, of: files.map(\.name), always: written, random: random)
        let chosen = Set(order)
        let least = LockTime.least(changed: earlierTimes.filter { written.contains($0.key) }.values,
                                   held: files.filter { chosen.contains($0.name) }.map(\.modification))
        var summary = Summary(files: files.count)
        var retried = Set<String>(), recreatedWritten = Set<String>()
        defer { try? removeSpares() }
        while !order.isEmpty {
            let batch = Array(order.prefix(batchSize))
            order.removeFirst(batch.count)
            let batchStart = Syscalls.now()
            let done = try recreateBatch(batch, time: .lock(least: least), keeping: written, deadline: deadline)
            summary.recreated += done.count
            recreatedWritten.formUnion(done.filter(written.contains))
            // A written file that changed between its copy and its swap (another vault's
            // re-creation took it first) goes once more: it must get its time (§11.2).
            let finished = Set(done)
            order += batch.filter { written.contains($0) && !finished.contains($0) && retried.insert($0).inserted }
            // Thin the rest at random so that it ends by the deadline; written files all stay.
            // At the last batch's pace: the first one creates its copies, later ones reuse files
            // (thinning is for good, so a pessimistic pace would cut the share for nothing).
            let now = Syscalls.now()
            let pace = Double(now - batchStart) / 1e9 / Double(batch.count)
            let remaining = max(Double(deadline - now) / 1e9, 0)
            let affordable = pace > 0 ? Int(min(remaining / pace, Double(order.count))) : order.count
            var others = order.indices.filter { !written.contains(order[$0]) }
            var dropped = Set<Int>()
            for _ in 0..<min(order.count - affordable, others.count) {
                dropped.insert(others.remove(at: try random.uniform(others.count)))
            }
            order = order.indices.filter { !dropped.contains($0) }.map { order[$0] }
        }
        try removeSpares()
        try settleTimes(written.subtracting(recreatedWritten), least: least)
        summary.written = recreatedWritten.count
        summary.seconds = Double(Syscalls.now() - start) / 1e9
        return summary
    }

    /// Re-creates `names` in the order given, in batches. Each re-created file gets `time`
    /// (nanoseconds since the epoch) as access and modification time, or with nil the time its
    /// batch took the folder's lock. Names that are not regular files of the storage's size and
    /// name form, not ours, or that changed meanwhile, are skipped. Returns the names re-created.
    public func recreate(_ names: [String], time: Int64? = nil) throws -> [String] {
        defer { try? removeSpares() }
        var done: [String] = []
        for start in stride(from: 0, to: names.count, by: batchSize) {
            let batch = Array(names[start..<min(start + batchSize, names.count)])
            done += try recreateBatch(batch, time: time.map(BatchTime.given) ?? .lock(least: .min), keeping: Set(batch), deadline: nil)
        }
        try removeSpares()
        return done
    }

    /// A random share of `files`, with every name of `always`, in random order.
    public static func choose(share: Double, of files: [String], always: Set<String> = [],
                              random: any RandomSource) throws -> [String] {
        var chosen = Array(always.filter(files.contains))
        var others = files.filter { !always.contains($0) }
        let wanted = Int((share * Double(others.count)).rounded())
        for _ in 0..<wanted {
            chosen.append(others.remove(at: try random.uniform(others.count)))
        }
        for index in chosen.indices.reversed() where index > 0 {
            chosen.swapAt(index, try random.uniform(index + 1))
        }
        return chosen
    }

    /// Every storage file with its modification time.
    private func storageFiles() throws -> [(name: String, modification: Int64)] {
        try Syscalls.listNames(folder).compactMap { name in
            guard FileName.isWellFormed(name), let status = try Syscalls.status(folder, name),
                  status.isRegular && status.size == Format.fileSize else { return nil }
            return (name, status.modification)
        }
    }
}
