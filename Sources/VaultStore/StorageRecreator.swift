import Glibc
import VaultCrypto
import VaultFormat

/// Re-creates storage files with identical bytes, so that birth time, change time, inode number
/// and listing position stop recording who made a file when (docs/FORMAT.md §11, R-DEN-1). It
/// takes part for every file of the storage, whoever owns it: it needs no key, and the bytes
/// never change (the one exception to R-SEC-4 and R-BLK-5).
///
/// Crash-safe by construction: files are re-created in batches, each under an exclusive flock
/// of the folder (writers hold it shared, so no write falls between a copy and its swap). Each
/// copy is made as `NAME.recreated` (not of the storage's name form, so no vault counts or
/// touches it); the batch's copies are made durable with one `syncfs`, each is compared byte for
/// byte with its original and renamed over it, then the folder is synced. At every instant NAME
/// holds its bytes and the count of storage files is unchanged; a crash leaves at most copies
/// under the temporary name, which `removeLeftovers` finds by their form.
public final class StorageRecreator {
    public static let temporarySuffix = ".recreated"
    /// Files per exclusive hold of the folder (64 MiB): each batch costs one `syncfs`, which on a
    /// busy disk waits for everyone's dirty data; writers of other vaults wait for a batch.
    public static let batchSize = 256
    private let folder: Int32
    private let batchSize: Int

    public init(path: String, batchSize: Int = StorageRecreator.batchSize) throws {
        folder = try Syscalls.openFolder(path)
        self.batchSize = batchSize
    }

    /// A separate open of the folder: its flock must not be the writers' (`SharedFolderLock`).
    init(folder: Int32) throws {
        self.folder = try Syscalls.reopenFolder(folder)
        batchSize = Self.batchSize
    }

    deinit { Syscalls.close(folder) }

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

    static func isTemporary(_ name: String) -> Bool {
        name.hasSuffix(temporarySuffix) && FileName.isWellFormed(String(name.dropLast(temporarySuffix.count)))
    }

    /// The re-creation at lock (§11.2–§11.3): every file of `written` and a random share of all
    /// the other storage files, in one random order; the share shrinks as the budget runs out,
    /// the written files are always re-created. Each gets its batch's time as access and
    /// modification time, and a written file at least the whole second after its time in
    /// `earlierTimes` (its time before the session wrote it).
    public func recreateAtLock(written: Set<String>, earlierTimes: [String: Int64] = [:], budget: RecreationBudget,
                               random: any RandomSource) throws -> Summary {
        let start = Syscalls.now()
        try removeLeftovers()
        let files = try storageFiles()
        let seconds = budget.seconds(forFiles: files.count)
        var order = try Self.choose(share: seconds > 0 ? budget.share : 0, of: files, always: written, random: random)
        var summary = Summary(files: files.count)
        var processed = 0
        while !order.isEmpty {
            let batch = Array(order.prefix(batchSize))
            order.removeFirst(batch.count)
            let done = try recreateBatch(batch, time: nil, earlierTimes: earlierTimes)
            summary.recreated += done.count
            summary.written += done.filter(written.contains).count
            processed += batch.count
            // Thin the rest at random so that it ends by the deadline; written files all stay.
            let elapsed = Double(Syscalls.now() - start) / 1e9
            let affordable = Int((seconds - elapsed) / (elapsed / Double(processed)))
            var others = order.indices.filter { !written.contains(order[$0]) }
            var dropped = Set<Int>()
            for _ in 0..<min(max(order.count - max(affordable, 0), 0), others.count) {
                dropped.insert(others.remove(at: try random.uniform(others.count)))
            }
            order = order.indices.filter { !dropped.contains($0) }.map { order[$0] }
        }
        summary.seconds = Double(Syscalls.now() - start) / 1e9
        return summary
    }

    /// Re-creates `names` in the order given, in batches under the folder's exclusive lock. Each
    /// re-created file gets `time` (nanoseconds since the epoch) as access and modification time,
    /// or with nil the time its batch took the lock. Names that are not regular files of the
    /// storage's size and name form, not ours, or that changed meanwhile, are skipped. Returns
    /// the names re-created.
    public func recreate(_ names: [String], time: Int64? = nil) throws -> [String] {
        var done: [String] = []
        for start in stride(from: 0, to: names.count, by: batchSize) {
            done += try recreateBatch(Array(names[start..<min(start + batchSize, names.count)]), time: time, earlierTimes: [:])
        }
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

    private func storageFiles() throws -> [String] {
        try Syscalls.listNames(folder).filter { name in
            guard FileName.isWellFormed(name), let status = try Syscalls.status(folder, name) else { return false }
            return status.isRegular && status.size == Format.fileSize
        }
    }

    /// A copy made and named, not yet swapped.
    private struct Copy {
        var name: String
        var inode: UInt64
        /// SHA-256 of the bytes copied (a batch's bytes would be 64 MiB).
        var digest: [UInt8]
        var temporary: String { name + StorageRecreator.temporarySuffix }
    }

    private func recreateBatch(_ names: [String], time: Int64?, earlierTimes: [String: Int64]) throws -> [String] {
        try Syscalls.lockFolder(folder, exclusive: true)
        defer { Syscalls.unlockFolder(folder) }
        // Taken under the lock: every write that came before is older, so a changed file's
        // new modification time is never earlier than its change (R-DEN-1, item 4).
        let time = time ?? Syscalls.now()
        var copies: [Copy] = []
        var swapped: [String] = []
        do {
            for name in names {
                if let copy = try copy(name) { copies.append(copy) }
            }
            guard !copies.isEmpty else { return [] }
            try Syscalls.syncfs(folder)
            while let copy = copies.first {
                if try swap(copy, time: Self.time(for: copy.name, batch: time, earlierTimes: earlierTimes)) {
                    swapped.append(copy.name)
                }
                copies.removeFirst()
            }
            try Syscalls.fsync(folder)
        } catch {
            for copy in copies { try? Syscalls.unlink(folder, copy.temporary) }
            throw error
        }
        return swapped
    }

    /// The batch's time, or for a file written this session the whole second after its earlier
    /// time when that is later: `rsync -a` and other copy tools compare times in whole seconds,
    /// and a lock in the same second as the last one would otherwise leave a changed file with
    /// the second a copy saw (§11.2). At most a second ahead of the clock per lock that second.
    static func time(for name: String, batch: Int64, earlierTimes: [String: Int64]) -> Int64 {
        guard let earlier = earlierTimes[name] else { return batch }
        return max(batch, (earlier / 1_000_000_000 + 1) * 1_000_000_000)
    }

    /// Reads `name` and writes its copy at the temporary name; nil for a name that is not a
    /// regular storage file of ours (it is left as it is). A file with another hard link is
    /// someone's on purpose: a copy would cut it from that link, so it is left too.
    private func copy(_ name: String) throws -> Copy? {
        guard FileName.isWellFormed(name) else { return nil }
        guard let original = try? Syscalls.openFile(folder, name, O_RDONLY) else { return nil }
        defer { Syscalls.close(original) }
        guard let metadata = try Syscalls.metadata(folder, name), metadata.isRegular, metadata.uid == geteuid(), metadata.links == 1,
              try Syscalls.status(original).size == Format.fileSize else { return nil }
        let bytes = try Syscalls.readFully(original, count: Format.fileSize, offset: 0)
        let copy = Copy(name: name, inode: metadata.inode, digest: SHA256.hash(bytes))
        guard let fd = try? Syscalls.openFile(folder, copy.temporary, O_WRONLY | O_CREAT | O_EXCL) else { return nil }
        defer { Syscalls.close(fd) }
        do {
            try Syscalls.setMode(fd, mode_t(metadata.mode & 0o7777))
            try Syscalls.writeFully(fd, bytes, offset: 0)
        } catch {
            try? Syscalls.unlink(folder, copy.temporary)
            throw error
        }
        return copy
    }

    /// Renames the copy over its original when the name still holds the file copied and both
    /// hold the same bytes; otherwise removes the copy.
    private func swap(_ copy: Copy, time: Int64) throws -> Bool {
        func holds(_ name: String) throws -> Bool {
            guard let fd = try? Syscalls.openFile(folder, name, O_RDONLY) else { return false }
            defer { Syscalls.close(fd) }
            return try SHA256.hash(Syscalls.readFully(fd, count: Format.fileSize, offset: 0)) == copy.digest
        }
        guard let now = try Syscalls.metadata(folder, copy.name), now.inode == copy.inode,
              try holds(copy.name), try holds(copy.temporary) else {
            try Syscalls.unlink(folder, copy.temporary)
            return false
        }
        try Syscalls.rename(folder, copy.temporary, to: copy.name)
        try Syscalls.setTimes(folder, copy.name, access: time, modification: time)
        return true
    }
}
