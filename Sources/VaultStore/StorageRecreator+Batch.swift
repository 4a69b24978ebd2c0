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

    /// The time a batch gives its files: one given (tools and tests), or the lock's (§11.2).
    enum BatchTime {
        case given(Int64)
        /// The clock's when the batch takes the folder's lock, `least` when that is later, and
        /// for each file never earlier than the time it holds.
        case lock(least: Int64)
    }

    /// Copies `names`, makes the copies durable, then under the folder's exclusive lock swaps
    /// in each copy whose original still holds the bytes copied, and syncs the folder. Names
    /// not in `keeping` are skipped once `deadline` has passed. Returns the names re-created.
    func recreateBatch(_ names: [String], time: BatchTime, keeping: Set<String>, deadline: Int64?) throws -> [String] {
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
        let batchTime = switch time {
        case .given(let given): given
        case .lock(let least): max(Syscalls.now(), least)
        }
        var swapped: [String] = []
        while !copies.isEmpty {
            let copy = copies.removeFirst()
            let swappedIn = try swap(copy) { held in
                if case .lock = time { max(batchTime, held) } else { batchTime }
            }
            if swappedIn { swapped.append(copy.name) }
        }
        // Before the lock goes: a writer that syncs a file later syncs the name holding its
        // bytes; and before the next batch writes into the files this one replaced.
        try Syscalls.fsync(folder)
        return swapped
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
            Syscalls.allocate(fd, Format.fileSize)
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
    /// replaced becomes a spare. Otherwise the copy does. The name gets `time(t)` as access and
    /// modification time, t being the time the original held. Returns whether it swapped.
    private func swap(_ copy: Copy, time: (Int64) -> Int64) throws -> Bool {
        let file = try Syscalls.metadata(copy.file.fd)
        guard let named = try Syscalls.metadata(folder, copy.file.name), named.inode == file.inode else {
            Syscalls.close(copy.file.fd)   // someone removed it (a leftover to them): not ours now
            return false
        }
        guard file.size == Format.fileSize, let held = try heldTime(copy) else {
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
        let time = time(held)
        try Syscalls.setTimes(folder, copy.name, access: time, modification: time)
        return true
    }

    /// The modification time of `copy.name` when it is still the file copied, holding the bytes
    /// copied; nil otherwise. Under the lock no writer can change it after this.
    private func heldTime(_ copy: Copy) throws -> Int64? {
        guard let fd = try? Syscalls.openFile(folder, copy.name, O_RDONLY) else { return nil }
        defer { Syscalls.close(fd) }
        let now = try Syscalls.metadata(fd)
        guard now.inode == copy.inode, now.links == 1, now.size == Format.fileSize,
              try Syscalls.readFully(fd, count: Format.fileSize, offset: 0) == copy.bytes else { return nil }
        return now.modification
    }

    /// Keeps `file` for the next copy when nobody else has it open (a reader that opened the
    /// name before the swap still reads the old bytes from it: they must not change under it)
    /// and its blocks lie in one piece; otherwise removes its name, and the reader keeps what
    /// it reads. A copy rewrites a spare in place, keeping its layout: a file an earlier release
    /// left in two pieces (§3) would live on as another name's, so the next copy is a new file.
    private func keepSpare(_ file: Spare) {
        // No extent map (tmpfs): no pieces to keep.
        if Syscalls.isOnlyOpen(file.fd) && (Syscalls.extentCount(file.fd) ?? 1) <= 1 { spares.append(file) } else { discard(file) }
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

    /// Under the exclusive lock: gives each of `names` (files the session changed that the lock
    /// could not re-create) the lock's time, never earlier than its own (§11.2).
    func settleTimes(_ names: Set<String>, least: Int64) throws {
        guard !names.isEmpty else { return }
        try Syscalls.lockFolder(folder, exclusive: true)
        defer { Syscalls.unlockFolder(folder) }
        let now = max(Syscalls.now(), least)
        for name in names where FileName.isWellFormed(name) {
            guard let status = try Syscalls.status(folder, name), status.isRegular, status.size == Format.fileSize else { continue }
            let time = max(now, status.modification)
            // Best effort, as the re-creation: a file that is not ours cannot take a time.
            try? Syscalls.setTimes(folder, name, access: time, modification: time)
        }
    }
}
