import Glibc
import VaultCrypto

/// The storage folder as the vault sees it: same-size files addressed by name. Implementations:
/// `DiskStorageFolder` (the real folder), `SimulatedStorageFolder` (memory, with power loss and
/// crashes for tests) and `CountingStorageFolder` (counts what each operation does).
///
/// Every file is `Format.fileSize` bytes. Writes into existing files are not durable until
/// `sync`; new names and removals are not durable until `syncFolder`.
public protocol StorageFolder: AnyObject, Sendable {
    /// Names of the files of the storage's form: regular, of the storage size, well-named.
    /// Anything else in the folder is left out (and never touched).
    func listFiles() throws -> [String]
    /// Every name in the folder, of any type or size: for finding a vault's leftovers by name.
    func listAllNames() throws -> [String]
    /// Whether anything at all (of any type or size) has this name.
    func entryExists(_ name: String) throws -> Bool
    /// The whole file; nil when nothing has that name; `unusableFile` when something does
    /// but is not a regular file of the storage size.
    func read(_ name: String) throws -> [UInt8]?
    /// The whole file as `read` gives it, for a file read once in a stream (a sequential
    /// reader's chunks, which the kernel then caches as plaintext): past the kernel's page cache
    /// where the folder can, so that it holds no second copy.
    func readStreaming(_ name: String) throws -> ArraySlice<UInt8>?
    /// Part of a file (a pack member). Throws `unusableFile` when absent or of the wrong form.
    func read(_ name: String, offset: Int, count: Int) throws -> [UInt8]
    /// Makes a new file that appears complete at its name. With `durable`, its data is on disk
    /// before the name appears; otherwise only after `sync`. The name itself becomes durable with
    /// the next `syncFolder`.
    func create(_ name: String, contents: [UInt8], durable: Bool) throws
    /// Makes a new group's files so that they appear together (docs/FORMAT.md §3.3): each is
    /// written in full before any has its name, then all are named, one after the other. On a
    /// failure none is left that could be removed. Durable as `create` without `durable`.
    func createGroup(_ files: [(name: String, contents: [UInt8])]) throws
    /// A file of the group to come, written now and named by `createGroup(_:written:)`; nil
    /// where the folder has no unnamed files (its groups are made from their bytes).
    func writeUnnamed(_ contents: [UInt8]) throws -> UnnamedFile?
    /// `createGroup` with some of the group's files written beforehand (`writeUnnamed`).
    func createGroup(_ files: [(name: String, contents: [UInt8])], written: [(name: String, file: UnnamedFile)]) throws
    /// `createGroup` whose files are each on disk before the first is named, linked in the order
    /// given: for a group with a root in it (a new vault's group 0, docs/FORMAT.md §3.3), which
    /// must never show at its name with bytes a power loss could take back.
    func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws
    /// Overwrites bytes of an existing file of the storage's form; the size never changes.
    func write(_ name: String, offset: Int, bytes: [UInt8]) throws
    /// Makes earlier writes to these files durable.
    func sync(_ names: [String]) throws
    func syncFolder() throws
    /// Removes a regular file of any size (a vault removes only names it derived itself); refuses
    /// anything else with `unusableFile`. Nothing at the name is not an error.
    func remove(_ name: String) throws
    /// Gives an existing file of the storage's form another name, atomically, never replacing
    /// anything at the new name (`exists`); the number of files does not change. Durable with
    /// the next `syncFolder` (until then a power loss leaves the old name).
    func rename(_ name: String, to newName: String) throws
    /// Bytes of the backing file system: total, free, and available to this user (free less
    /// the reserve only root may use).
    func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64)
    /// Puts new bytes at an existing name atomically and durably: after a crash the name holds
    /// the old bytes or the new, never a mixture (docs/FORMAT.md §14.7: the owner's unlock
    /// record gains the vault's identity).
    func replace(_ name: String, contents: [UInt8]) throws
    /// Puts files a sync downloaded into `downloads` at their names (docs/FORMAT.md §13.11):
    /// each of `replacing` over the file of its name, atomically; each of `groups` whole, as
    /// `createGroup` makes a group (its fill written first, then all names in a row). Durable as
    /// `createGroup`.
    func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws
    /// At the open of a vault that writes: removes the copies an interrupted re-creation left
    /// (docs/FORMAT.md §11.3) and the download folders of killed syncs (§13.11).
    func removeRecreationLeftovers() throws
    /// How many download folders of killed syncs (§13.11) the next writing open would remove;
    /// one a sync in progress holds is not counted (`dotsafe fsck`).
    func downloadLeftovers() throws -> Int
    /// At lock, after the last commit (§11.2–§11.3): when this session wrote anything,
    /// re-creates the files it created or wrote and a random share of all others.
    func recreateAtLock(random: any RandomSource) throws
    /// Before something outside the folder (a sync's download) writes these names: they count
    /// as files this session wrote, for the lock's times (§11.2).
    func willOverwrite(_ names: [String]) throws
    /// Gives back what the folder keeps ready for the next writes (a quiet daemon).
    func releaseSpareFiles()
}

/// Folders with no metadata to hide (memory, tests) re-create nothing.
extension StorageFolder {
    public func readStreaming(_ name: String) throws -> ArraySlice<UInt8>? { try read(name)?[...] }

    public func createGroup(_ files: [(name: String, contents: [UInt8])]) throws { try createOneByOne(files) }

    public func writeUnnamed(_ contents: [UInt8]) throws -> UnnamedFile? { nil }

    public func releaseSpareFiles() {}

    /// Without unnamed files: each created durably, in order, so that a crash between two leaves
    /// a prefix of the group, as one between two links does.
    public func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        for file in files { try create(file.name, contents: file.contents, durable: true) }
    }

    public func createGroup(_ files: [(name: String, contents: [UInt8])], written: [(name: String, file: UnnamedFile)]) throws {
        precondition(written.isEmpty, "a folder without unnamed files wrote one")
        try createGroup(files)
    }

    /// A group made one file after the other, each through `create`: what a crash between two
    /// creates leaves is what a crash between two links of `DiskStorageFolder` leaves.
    public func createOneByOne(_ files: [(name: String, contents: [UInt8])]) throws {
        var created: [String] = []
        do {
            for file in files {
                try create(file.name, contents: file.contents, durable: false)
                created.append(file.name)
            }
        } catch {
            for name in created { try? remove(name) }
            throw error
        }
    }

    /// A folder that cannot replace atomically refuses: a torn unlock record loses a vault.
    public func replace(_ name: String, contents: [UInt8]) throws {
        throw StoreError.system(operation: "replace \(name)", errno: ENOTSUP)
    }
    public func removeRecreationLeftovers() throws {}
    public func downloadLeftovers() throws -> Int { 0 }
    public func recreateAtLock(random: any RandomSource) throws {}
    public func willOverwrite(_ names: [String]) throws {}
}
