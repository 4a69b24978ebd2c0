import Glibc
import VaultCrypto
import VaultFormat

/// Making and recognising storages (docs/FORMAT.md §3).
public enum Storage {
    /// Creates a storage: the folder (mode 0700) and 64 to 128 covers. Refuses a folder that
    /// has anything in it. Returns the number of files made.
    @discardableResult
    public static func initialize(at path: String, random: any RandomSource) throws -> Int {
        let created: Bool
        do { created = try Syscalls.makeFolder(path, mode: 0o700) } catch StoreError.system(_, ENOENT) {
            // Not made with its parents: a mistyped path would leave a tree of folders behind.
            throw StoreError.parentMissing(path)
        }
        let folder = try DiskStorageFolder(path: path)
        if !created {
            guard try folder.listAllNames().isEmpty else { throw StoreError.folderNotEmpty(path) }
        }
        try folder.restrictToOwner()
        return try addCovers(to: folder, random: random)
    }

    /// Fills a new storage with covers: 64 + uniform(64), rounded up to a multiple of 16.
    public static func addCovers(to folder: any StorageFolder, random: any RandomSource) throws -> Int {
        let first = Format.minimumStorageFiles + (try random.uniform(Format.minimumStorageFiles))
        let count = (first + Format.groupSize - 1) / Format.groupSize * Format.groupSize
        for _ in 0..<count {
            let cover = try Self.cover(random: random)
            try folder.create(cover.name, contents: cover.contents, durable: false)
        }
        try folder.sync(try folder.listFiles())
        try folder.syncFolder()
        return count
    }

    /// A cover (§3.1): `random(F)` at a name of the storage's form from random bytes, which no
    /// key derives.
    public static func cover(random: any RandomSource) throws -> (name: String, contents: [UInt8]) {
        (FileName.encode(try random.bytes(Format.nameBytes)), try random.bytes(Format.fileSize))
    }

    /// Opens a folder that must be a storage: at least 64 files of the storage's form.
    public static func open(at path: String, recreation: RecreationBudget = .standard) throws -> DiskStorageFolder {
        let folder: DiskStorageFolder
        do { folder = try DiskStorageFolder(path: path, recreation: recreation) } catch let error as StoreError {
            throw StoreError.notAStorage("\(path) cannot be opened as a folder (\(error))")
        }
        try validate(folder, path: path)
        return folder
    }

    public static func validate(_ folder: any StorageFolder, path: String) throws {
        let files = try folder.listFiles().count
        guard files >= Format.minimumStorageFiles else {
            throw StoreError.notAStorage("\(path) holds \(files) storage files, a storage has at least \(Format.minimumStorageFiles) (make one with 'dotsafe init')")
        }
    }
}

extension DiskStorageFolder {
    func restrictToOwner() throws { try withFolder { try Syscalls.setMode($0, 0o700) } }
}
