import VaultFormat
import VaultStore

/// A full disk reaches the program that fills it. Data goes into the cache and is written
/// behind or at the commit, so a `cp` onto a full disk used to succeed into memory, up to the
/// cache's size, and the commit that failed then held back every later change, a rename too.
/// Once a file could not be made for lack of room, a write whose data would need a new group
/// fails with ENOSPC before it changes anything, as on a disk file system, until there is room
/// again: free files (a delete committed), a group made, or room on the disk for a group
/// (another program freed some).
extension FileWriter {
    /// The bytes of a new group on disk.
    static let groupBytes = UInt64(Format.groupSize * Format.fileSize)

    /// A write into the storage failed: for lack of room, the storage counts as full.
    mutating func noteWriteFailure(_ error: (any Error)?) {
        switch error {
        case StoreError.noSpace?, VaultError.store(.noSpace)?: storageIsFull = true
        default: break
        }
    }

    /// Throws ENOSPC if the storage is full and data would need a new group; a look at the
    /// disk's free space (`capacity`) is taken only then.
    mutating func checkRoomForData() throws {
        guard storageIsFull, allocator.freeCount <= Self.reservedFiles else { return }
        guard let room = try? storage.capacity().available, room >= Self.groupBytes else { throw StoreError.noSpace }
        storageIsFull = false
    }
}
