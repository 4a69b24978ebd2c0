import Synchronization
import VaultCrypto

/// Counts what operations do to the storage (CryFS's e2e perf tests are the model): tests assert
/// these counts, which catch regressions that timings on a noisy machine never show.
public final class CountingStorageFolder: StorageFolder {
    public struct Counts: Equatable, Sendable {
        public var reads = 0, partialReads = 0, creates = 0, writes = 0, syncs = 0, folderSyncs = 0, removes = 0, lists = 0, renames = 0
        /// Groups made whole (their files are counted as creates too).
        public var groups = 0
        /// Of the reads, those of a stream (`readStreaming`).
        public var streamedReads = 0
        /// Bytes the reads returned: a read of a pack member must not cost a whole file.
        public var bytesRead = 0
        public init() {}
    }

    public let base: any StorageFolder
    private let counts = Mutex(Counts())

    public init(_ base: any StorageFolder) { self.base = base }

    public var current: Counts { counts.withLock { $0 } }
    public func reset() { counts.withLock { $0 = Counts() } }

    public func listFiles() throws -> [String] { count(\.lists); return try base.listFiles() }
    public func listAllNames() throws -> [String] { count(\.lists); return try base.listAllNames() }
    public func entryExists(_ name: String) throws -> Bool { try base.entryExists(name) }
    public func read(_ name: String) throws -> [UInt8]? {
        count(\.reads)
        return try counted(base.read(name))
    }
    public func readStreaming(_ name: String) throws -> ArraySlice<UInt8>? {
        counts.withLock { $0.reads += 1; $0.streamedReads += 1 }
        let bytes = try base.readStreaming(name)
        counts.withLock { $0.bytesRead += bytes?.count ?? 0 }
        return bytes
    }
    public func read(_ name: String, offset: Int, count n: Int) throws -> [UInt8] {
        count(\.partialReads)
        return try counted(base.read(name, offset: offset, count: n))
    }
    public func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        count(\.creates); try base.create(name, contents: contents, durable: durable)
    }
    /// Counted as its creates: what the storage sees is a file per name.
    public func createGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        counts.withLock { $0.creates += files.count; $0.groups += 1 }
        try base.createGroup(files)
    }
    public func writeUnnamed(_ contents: [UInt8]) throws -> UnnamedFile? { try base.writeUnnamed(contents) }
    public func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws {
        counts.withLock { $0.creates += files.count; $0.groups += 1 }
        try base.createDurableGroup(files)
    }
    public func createGroup(_ files: [(name: String, contents: [UInt8])], written: [(name: String, file: UnnamedFile)]) throws {
        counts.withLock { $0.creates += files.count + written.count; $0.groups += 1 }
        try base.createGroup(files, written: written)
    }
    public func write(_ name: String, offset: Int, bytes: [UInt8]) throws { count(\.writes); try base.write(name, offset: offset, bytes: bytes) }
    public func sync(_ names: [String]) throws { count(\.syncs); try base.sync(names) }
    public func syncFolder() throws { count(\.folderSyncs); try base.syncFolder() }
    public func remove(_ name: String) throws { count(\.removes); try base.remove(name) }
    public func replace(_ name: String, contents: [UInt8]) throws { count(\.creates); try base.replace(name, contents: contents) }
    public func rename(_ name: String, to newName: String) throws { count(\.renames); try base.rename(name, to: newName) }
    public func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64) { try base.capacity() }
    /// Counted as renames and, for the fill of groups, creates.
    public func placeDownloads(from downloads: DownloadFolder, replacing: [String], groups: [DownloadedGroup]) throws {
        counts.withLock { counts in
            counts.renames += replacing.count + groups.reduce(0) { $0 + $1.downloaded.count }
            counts.creates += groups.reduce(0) { $0 + $1.fill.count }
        }
        try base.placeDownloads(from: downloads, replacing: replacing, groups: groups)
    }
    public func removeRecreationLeftovers() throws { try base.removeRecreationLeftovers() }
    public func downloadLeftovers() throws -> Int { try base.downloadLeftovers() }
    public func recreateAtLock(random: any RandomSource) throws { try base.recreateAtLock(random: random) }
    public func willOverwrite(_ names: [String]) throws { try base.willOverwrite(names) }
    public func releaseSpareFiles() { base.releaseSpareFiles() }

    private func count(_ field: WritableKeyPath<Counts, Int>) { counts.withLock { $0[keyPath: field] += 1 } }

    private func counted(_ bytes: [UInt8]?) -> [UInt8]? {
        counts.withLock { $0.bytesRead += bytes?.count ?? 0 }
        return bytes
    }

    private func counted(_ bytes: [UInt8]) -> [UInt8] {
        counts.withLock { $0.bytesRead += bytes.count }
        return bytes
    }
}
