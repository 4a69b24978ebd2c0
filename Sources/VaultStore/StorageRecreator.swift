import Glibc
import VaultCrypto
import VaultFormat

/// Re-creates storage files with identical bytes, so that birth time, change time, inode number
/// and listing position stop recording who made a file when (docs/FORMAT.md §11, R-DEN-1). It
/// takes part for every file of the storage, whoever owns it: it needs no key, and the bytes
/// never change (the one exception to R-SEC-4 and R-BLK-5).
///
/// Crash-safe by construction: the copy is made unnamed (O_TMPFILE), written, synced, linked
/// as `NAME.recreated` (not of the storage's name form, so no vault counts or touches it),
/// compared byte for byte with the original and renamed over it. At every instant NAME holds
/// its bytes and the count of storage files is unchanged; a crash leaves at most a copy under
/// the temporary name, which `removeLeftovers` finds by its form. All of it runs under an
/// exclusive flock of the folder; writers hold it shared (never a lock on a storage file).
public final class StorageRecreator {
    public static let temporarySuffix = ".recreated"
    private let folder: Int32

    public init(path: String) throws { folder = try Syscalls.openFolder(path) }

    deinit { Syscalls.close(folder) }

    /// Copies a re-creation cut short left behind; removes them. Returns how many.
    @discardableResult
    public func removeLeftovers() throws -> Int {
        let leftovers = try Syscalls.listNames(folder).filter(Self.isTemporary)
        for name in leftovers { try Syscalls.unlink(folder, name) }
        if !leftovers.isEmpty { try Syscalls.fsync(folder) }
        return leftovers.count
    }

    static func isTemporary(_ name: String) -> Bool {
        name.hasSuffix(temporarySuffix) && FileName.isWellFormed(String(name.dropLast(temporarySuffix.count)))
    }

    /// Re-creates `names` in the order given, under the folder's exclusive lock. With `time`
    /// (nanoseconds since the epoch), each re-created file gets it as access and modification
    /// time; otherwise it keeps its own. Names that are not regular files of the storage's size
    /// and name form, or that changed meanwhile, are skipped. Returns the names re-created.
    public func recreate(_ names: [String], time: Int64? = nil) throws -> [String] {
        try Syscalls.lockFolder(folder, exclusive: true)
        defer { Syscalls.unlockFolder(folder) }
        try removeLeftovers()
        var done: [String] = []
        for name in names where try recreateOne(name, time: time) { done.append(name) }
        if !done.isEmpty { try Syscalls.fsync(folder) }
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

    private func recreateOne(_ name: String, time: Int64?) throws -> Bool {
        guard FileName.isWellFormed(name) else { return false }
        guard let original = try? Syscalls.openFile(folder, name, O_RDONLY) else { return false }
        defer { Syscalls.close(original) }
        let before = try Syscalls.status(original)
        guard before.isRegular, before.size == Format.fileSize, let metadata = try Syscalls.metadata(folder, name) else { return false }
        let bytes = try Syscalls.readFully(original, count: Format.fileSize, offset: 0)
        guard let copy = try Syscalls.openUnnamed(folder) else { return false }
        defer { Syscalls.close(copy) }
        try Syscalls.writeFully(copy, bytes, offset: 0)
        try Syscalls.fsync(copy)
        let temporary = name + Self.temporarySuffix
        try Syscalls.link(unnamed: copy, folder: folder, name: temporary)
        // The swap only when the name still holds this file and both hold the same bytes.
        let linked = try Syscalls.openFile(folder, temporary, O_RDONLY)
        defer { Syscalls.close(linked) }
        guard let now = try Syscalls.metadata(folder, name), now.inode == metadata.inode,
              try Syscalls.readFully(original, count: Format.fileSize, offset: 0) == bytes,
              try Syscalls.readFully(linked, count: Format.fileSize, offset: 0) == bytes else {
            try Syscalls.unlink(folder, temporary)
            return false
        }
        try Syscalls.rename(folder, temporary, to: name)
        try Syscalls.setTimes(folder, name, access: time ?? metadata.access, modification: time ?? metadata.modification)
        return true
    }
}
