import VaultCrypto
import VaultStore

/// A storage folder that passes every call to another: the base of a test's folder that holds,
/// counts, cuts or fails some calls. Every requirement is forwarded here, so that a subclass
/// keeps the base's behaviour for the calls it does not name (the protocol's defaults would
/// silently drop a re-creation, a replace or a download's announcement).
open class ForwardingStorageFolder: StorageFolder, @unchecked Sendable {
    // @unchecked: `base` never changes; subclasses keep their own state behind locks.
    public let base: any StorageFolder

    public init(_ base: any StorageFolder) { self.base = base }

    open func listFiles() throws -> [String] { try base.listFiles() }
    open func listAllNames() throws -> [String] { try base.listAllNames() }
    open func entryExists(_ name: String) throws -> Bool { try base.entryExists(name) }
    open func read(_ name: String) throws -> [UInt8]? { try base.read(name) }
    open func read(_ name: String, offset: Int, count: Int) throws -> [UInt8] { try base.read(name, offset: offset, count: count) }
    open func create(_ name: String, contents: [UInt8], durable: Bool) throws { try base.create(name, contents: contents, durable: durable) }
    open func createGroup(_ files: [(name: String, contents: [UInt8])]) throws { try base.createGroup(files) }
    open func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws { try base.createDurableGroup(files) }
    /// Through `read`, which a subclass may hold, cut or fail.
    open func readStreaming(_ name: String) throws -> ArraySlice<UInt8>? { try read(name)?[...] }
    /// No unnamed files: every group's bytes reach `createGroup`, which a subclass may hold, cut
    /// or fail.
    open func writeUnnamed(_ contents: [UInt8]) throws -> UnnamedFile? { nil }
    open func createGroup(_ files: [(name: String, contents: [UInt8])], written: [(name: String, file: UnnamedFile)]) throws {
        precondition(written.isEmpty, "no unnamed files here")
        try createGroup(files)
    }
    open func write(_ name: String, offset: Int, bytes: [UInt8]) throws { try base.write(name, offset: offset, bytes: bytes) }
    open func sync(_ names: [String]) throws { try base.sync(names) }
    open func syncFolder() throws { try base.syncFolder() }
    open func remove(_ name: String) throws { try base.remove(name) }
    open func rename(_ name: String, to newName: String) throws { try base.rename(name, to: newName) }
    open func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64) { try base.capacity() }
    open func replace(_ name: String, contents: [UInt8]) throws { try base.replace(name, contents: contents) }
    open func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        try base.placeDownloads(from: downloads, replacing: replacing, groups: groups)
    }
    open func removeRecreationLeftovers() throws { try base.removeRecreationLeftovers() }
    open func downloadLeftovers() throws -> Int { try base.downloadLeftovers() }
    open func recreateAtLock(random: any RandomSource) throws { try base.recreateAtLock(random: random) }
    open func willOverwrite(_ names: [String]) throws { try base.willOverwrite(names) }
}
