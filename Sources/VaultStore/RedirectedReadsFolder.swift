import Glibc
import VaultCrypto

/// A read-only view of a storage folder in which some names read from other files: a vault
/// opened read-only whose root lists staged downloads not yet put in place (docs/FORMAT.md
/// §13.5, tag 1025) reads each target from its staged file. Nothing is written through it.
public final class RedirectedReadsFolder: StorageFolder {
    public let base: any StorageFolder
    /// Target name → the name whose bytes it has.
    let redirects: [String: String]

    public init(_ base: any StorageFolder, redirects: [String: String]) {
        self.base = base
        self.redirects = redirects
    }

    private func source(_ name: String) -> String { redirects[name] ?? name }
    private func refuse(_ name: String) -> StoreError { StoreError.system(operation: "write \(name) (read-only)", errno: EROFS) }

    public func listFiles() throws -> [String] { try base.listFiles() }
    public func listAllNames() throws -> [String] { try base.listAllNames() }
    public func entryExists(_ name: String) throws -> Bool { try base.entryExists(name) }
    public func read(_ name: String) throws -> [UInt8]? { try base.read(source(name)) }
    public func read(_ name: String, offset: Int, count: Int) throws -> [UInt8] { try base.read(source(name), offset: offset, count: count) }
    public func create(_ name: String, contents: [UInt8], durable: Bool) throws { throw refuse(name) }
    public func createGroup(_ files: [(name: String, contents: [UInt8])]) throws { throw refuse(files.first?.name ?? "") }
    public func createDurableGroup(_ files: [(name: String, contents: [UInt8])]) throws { throw refuse(files.first?.name ?? "") }
    public func createGroup(_ files: [(name: String, contents: [UInt8])], written: [(name: String, file: UnnamedFile)]) throws {
        throw refuse(files.first?.name ?? written.first?.name ?? "")
    }
    public func write(_ name: String, offset: Int, bytes: [UInt8]) throws { throw refuse(name) }
    public func sync(_ names: [String]) throws {}
    public func syncFolder() throws {}
    public func remove(_ name: String) throws { throw refuse(name) }
    public func replace(_ name: String, contents: [UInt8]) throws { throw refuse(name) }
    public func rename(_ name: String, to newName: String) throws { throw refuse(name) }
    public func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64) { try base.capacity() }
    public func downloadLeftovers() throws -> Int { try base.downloadLeftovers() }
}
