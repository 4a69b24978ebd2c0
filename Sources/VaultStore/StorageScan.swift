import VaultFormat

/// What an observer of a storage folder sees without reading any file: every storage file's
/// name, position in the listing and statx metadata. Scanning opens no file and leaves no
/// access time behind, on the files or on the folder (`dotsafe audit`, R-DEN-3).
public struct StorageScan: Sendable {
    public struct File: Equatable, Sendable {
        public var name: String
        /// Position in the folder's listing (readdir order), counting storage files only.
        public var order: Int
        public var metadata: FileMetadata
        /// How many pieces the file system keeps its blocks in (FIEMAP); nil where it keeps no
        /// such map (tmpfs). An observer of the disk reads it as plainly as a time.
        public var extents: Int?
        /// Where its first block lies on the device (bytes); nil as for `extents`.
        public var firstBlock: Int64?

        public init(name: String, order: Int, metadata: FileMetadata, extents: Int? = nil, firstBlock: Int64? = nil) {
            self.name = name
            self.order = order
            self.metadata = metadata
            self.extents = extents
            self.firstBlock = firstBlock
        }
    }

    /// Storage files (regular, of the storage size and name form), in listing order.
    public var files: [File]
    /// Entries of the folder that are not storage files (ignored by DotSafe, as by the audit).
    public var otherEntries: Int
    /// The file system's statfs magic number.
    public var fileSystemType: UInt64

    /// Scans the folder at `path`; refuses a folder that is not a storage (fewer than 64 files).
    /// `progress` is told (done, total) after each entry of the folder.
    public static func scan(_ path: String, progress: ((Int, Int) -> Void)? = nil) throws -> StorageScan {
        let folder: Int32
        do { folder = try Syscalls.openFolderWithoutAccessTime(path) } catch let error as StoreError {
            throw StoreError.notAStorage("\(path) cannot be opened as a folder (\(error))")
        }
        defer { Syscalls.close(folder) }
        var files: [File] = []
        var others = 0
        let names = try Syscalls.listNames(folder)
        for (index, name) in names.enumerated() {
            defer { progress?(index + 1, names.count) }
            guard FileName.isWellFormed(name), let metadata = try Syscalls.metadata(folder, name),
                  metadata.isRegular, metadata.size == Int64(Format.fileSize) else {
                others += 1
                continue
            }
            let map = Syscalls.extentMap(folder, name)
            files.append(File(name: name, order: files.count, metadata: metadata, extents: map?.count, firstBlock: map?.firstBlock))
        }
        guard files.count >= Format.minimumStorageFiles else {
            throw StoreError.notAStorage("\(path) holds \(files.count) storage files, a storage has at least \(Format.minimumStorageFiles)")
        }
        return StorageScan(files: files, otherEntries: others, fileSystemType: try Syscalls.fileSystemType(folder))
    }
}
