import Glibc
import VaultFormat

/// One batch of a re-creation (docs/FORMAT.md §11.3): the copies are made without holding the
/// folder, so that writers of other vaults wait only for the checks and swaps.
extension StorageRecreator {
    /// A file no storage name holds, open for writing, under a temporary name: one a batch
    /// replaced, or a copy that was not swapped in. The next copy is written into it, so that
    /// the file system neither frees nor allocates a file for it.
    struct Spare {
        var fd: Int32
        var name: String
    }

    /// A copy written, not yet swapped in.
    struct Copy {
        var name: String
        /// The original's inode, and the bytes read from it and copied (a batch holds 16 MiB:
        /// comparing them costs less than hashing them twice).
        var inode: UInt64
        var bytes: [UInt8]
        /// The copy: its name (not of the storage's form) and an open of it, which keeps its
        /// inode number from being handed to another file before the check.
        var file: Spare
    }

    /// Copies `names`, makes the copies durable, then under the folder's exclusive lock swaps
    /// in each copy whose original still holds the bytes copied, and syncs the folder. Names
    /// not in `keeping` are skipped once `deadline` has passed. Returns the names re-created.
    func recreateBatch(_ names: [String], time: Int64?, earlierTimes: [String: Int64], keeping: Set<String>,
                       deadline: Int64?) throws -> [String] {
        var copies: [Copy] = []
        defer { for copy in copies { discard(copy.file) } }
        for name in names {
            if let deadline, !keeping.contains(name), Syscalls.now() > deadline { continue }
            if let copy = try copy(name) { copies.append(copy) }
        }
        guard !copies.isEmpty else { return [] }
        // Before any swap: after a crash the name holds its bytes, in the old file or the copy.
        try Syscalls.syncfs(folder)
        try Syscalls.lockFolder(folder, exclusive: true)
        defer { Syscalls.unlockFolder(folder) }
        // Taken under the lock: every write that came before is older, so a changed file's
        // new modification time is never earlier than its change (R-DEN-1, item 4).
        let time = time ?? Syscalls.now()
        var swapped: [String] = []
        while !copies.isEmpty {
            let copy = copies.removeFirst()
            if try swap(copy, time: Self.time(for: copy.name, batch: time, earlierTimes: earlierTimes)) {
                swapped.append(copy.name)
            }
        }
        // Before the lock goes: a writer that syncs a file later syncs the name holding its
        // bytes; and before the next batch writes into the files this one replaced.
        try Syscalls.fsync(folder)
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

    /// Reads `name` and writes its copy into a spare or a new file at the temporary name; nil
    /// for a name that is not a regular storage file of ours (it is left as it is). A file with
    /// another hard link is someone's on purpose: a copy would cut it from that link.
    private func copy(_ name: String) throws -> Copy? {
        guard FileName.isWellFormed(name), let original = try? Syscalls.openFile(folder, name, O_RDONLY) else { return nil }
        defer { Syscalls.close(original) }
        let metadata = try Syscalls.metadata(original)
        guard metadata.isRegular, metadata.uid == geteuid(), metadata.links == 1, metadata.size == Format.fileSize else { return nil }
        let bytes = try Syscalls.readFully(original, count: Format.fileSize, offset: 0)
        let file: Spare
        if let spare = spares.popLast() {
            file = spare
        } else {
            let temporary = name + Self.temporarySuffix
            guard let fd = try? Syscalls.openFile(folder, temporary, O_WRONLY | O_CREAT | O_EXCL) else { return nil }
            file = Spare(fd: fd, name: temporary)
        }
        do {
            try Syscalls.setMode(file.fd, mode_t(metadata.mode & 0o7777))
            try Syscalls.writeFully(file.fd, bytes, offset: 0)
        } catch {
            discard(file)
            throw error
        }
        return Copy(name: name, inode: metadata.inode, bytes: bytes, file: file)
    }

    /// Under the lock: exchanges the copy with its original when the name still holds the file
    /// copied, with the bytes copied, and the temporary name still holds the copy; the file
    /// replaced becomes a spare. Otherwise the copy does. Returns whether it swapped.
    private func swap(_ copy: Copy, time: Int64) throws -> Bool {
        let file = try Syscalls.metadata(copy.file.fd)
        guard let named = try Syscalls.metadata(folder, copy.file.name), named.inode == file.inode else {
            Syscalls.close(copy.file.fd)   // someone removed it (a leftover to them): not ours now
            return false
        }
        guard file.size == Format.fileSize, try holdsCopiedBytes(copy) else {
            keepSpare(copy.file)
            return false
        }
        let exchanged: Bool
        do { exchanged = try Syscalls.exchange(folder, copy.file.name, copy.name) } catch {
            discard(copy.file)
            throw error
        }
        if exchanged {
            Syscalls.close(copy.file.fd)
            // What the name held is now at the temporary name, with the same bytes.
            if let fd = try? Syscalls.openFile(folder, copy.file.name, O_WRONLY) {
                if (try? Syscalls.metadata(fd).inode) == copy.inode { keepSpare(Spare(fd: fd, name: copy.file.name)) } else { Syscalls.close(fd) }
            }
        } else {
            try Syscalls.rename(folder, copy.file.name, to: copy.name)
            Syscalls.close(copy.file.fd)
        }
        try Syscalls.setTimes(folder, copy.name, access: time, modification: time)
        return true
    }

    /// Whether `copy.name` is still the file copied, holding the bytes copied. Under the lock no
    /// writer can change it after this.
    private func holdsCopiedBytes(_ copy: Copy) throws -> Bool {
        guard let fd = try? Syscalls.openFile(folder, copy.name, O_RDONLY) else { return false }
        defer { Syscalls.close(fd) }
        let now = try Syscalls.metadata(fd)
        guard now.inode == copy.inode, now.links == 1, now.size == Format.fileSize else { return false }
        return try Syscalls.readFully(fd, count: Format.fileSize, offset: 0) == copy.bytes
    }

    /// Keeps `file` for the next copy when nobody else has it open (a reader that opened the
    /// name before the swap still reads the old bytes from it: they must not change under it);
    /// otherwise removes its name, and the reader keeps what it reads.
    private func keepSpare(_ file: Spare) {
        if Syscalls.isOnlyOpen(file.fd) { spares.append(file) } else { discard(file) }
    }

    /// Removes a file of ours at a temporary name: what it holds is at its storage name too.
    private func discard(_ file: Spare) {
        if let named = try? Syscalls.metadata(folder, file.name), (try? Syscalls.metadata(file.fd).inode) == named.inode {
            try? Syscalls.unlink(folder, file.name)
        }
        Syscalls.close(file.fd)
    }

    /// Removes the spares left after the last batch, under the exclusive lock.
    func removeSpares() throws {
        guard !spares.isEmpty else { return }
        try Syscalls.lockFolder(folder, exclusive: true)
        defer { Syscalls.unlockFolder(folder) }
        while let spare = spares.popLast() { discard(spare) }
        try Syscalls.fsync(folder)
    }
}
