import Glibc
import Synchronization

/// The writers' side of the storage folder's flock (docs/FORMAT.md §11.3): held shared around
/// every open–write–close of a storage file, so that a re-creation (exclusive, `StorageRecreator`)
/// never falls between a write and the file it goes to. flock belongs to the open folder, which
/// all threads of the process share: one thread's unlock would drop every thread's lock, so the
/// holders are counted and the last one out unlocks.
final class SharedFolderLock: Sendable {
    private let folder: Int32
    private let holders = Mutex(0)

    init(folder: Int32) { self.folder = folder }

    func withShared<R>(_ body: () throws -> R) throws -> R {
        try holders.withLock { (count: inout Int) throws -> Void in
            // Blocks (holding the counter) while a re-creation runs: writers wait for it anyway.
            if count == 0 {
                // A file system without flock (some network ones) cannot take part in
                // re-creation either (its exclusive lock fails the same way): write unlocked.
                do { try Syscalls.lockFolder(folder, exclusive: false) } catch StoreError.system(_, let code)
                    where code == EOPNOTSUPP || code == ENOLCK || code == EINVAL {}
            }
            count += 1
        }
        defer {
            holders.withLock { count in
                count -= 1
                if count == 0 { Syscalls.unlockFolder(folder) }
            }
        }
        return try body()
    }
}
