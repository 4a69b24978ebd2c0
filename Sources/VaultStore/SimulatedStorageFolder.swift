import Synchronization
import VaultFormat

/// A storage folder in memory that behaves like a disk under power loss: what was not synced is
/// lost by `powerLoss()`. It can also crash: after `crash(afterMutations:)` further changes throw
/// `simulatedCrash` and are not applied, as if the process had died there. Tests drive commits
/// through it to check that every crash leaves the old or the new state (R-FS-2).
public final class SimulatedStorageFolder: StorageFolder {
    private struct File {
        /// What a reader sees now (the page cache).
        var current: [UInt8]
        /// What the disk holds: survives a power loss.
        var durable: [UInt8]
        var linkedNow: Bool
        var linkedDurably: Bool
    }

    private struct State {
        var files: [String: File] = [:]
        /// Things other than storage files, planted by tests: they must never be touched.
        var foreign: Set<String> = []
        var mutationsLeft: Int? = nil
        var mutations = 0
        var visible: [String: [UInt8]] { files.compactMapValues { $0.linkedNow ? $0.current : nil } }
    }

    private let state = Mutex(State())

    public init() {}

    /// Crash after this many more mutating operations (create, write, rename, remove, sync).
    public func crash(afterMutations count: Int) { state.withLock { $0.mutationsLeft = count } }
    public var mutationCount: Int { state.withLock { $0.mutations } }

    /// Power is cut: unsynced writes, unsynced new names and unsynced removals are lost. The
    /// folder works again afterwards.
    public func powerLoss() {
        state.withLock { s in
            s.files = s.files.compactMapValues { file in
                file.linkedDurably ? File(current: file.durable, durable: file.durable, linkedNow: true, linkedDurably: true) : nil
            }
            s.mutationsLeft = nil
        }
    }

    /// The process died but the kernel kept everything it had (SIGKILL): writes survive.
    public func processCrash() { state.withLock { $0.mutationsLeft = nil } }

    /// Plants a name that is not a storage file (a folder, a link, a file of another size).
    public func plantForeign(_ name: String) { _ = state.withLock { $0.foreign.insert(name) } }

    /// Everything a reader sees now, for comparisons in tests.
    public var snapshot: [String: [UInt8]] { state.withLock { $0.visible } }

    /// Replaces a file's bytes behind the vault's back, as an attacker with the folder would.
    public func tamper(_ name: String, with bytes: [UInt8]?) {
        state.withLock { s in
            if let bytes { s.files[name] = File(current: bytes, durable: bytes, linkedNow: true, linkedDurably: true) } else { s.files[name] = nil }
        }
    }

    public func listFiles() throws -> [String] {
        state.withLock { $0.visible.filter { $0.value.count == Format.fileSize && FileName.isWellFormed($0.key) }.map(\.key).sorted() }
    }

    public func listAllNames() throws -> [String] {
        state.withLock { s in Array(s.files.filter { $0.value.linkedNow }.keys) + Array(s.foreign) }
    }

    public func entryExists(_ name: String) throws -> Bool {
        state.withLock { $0.files[name]?.linkedNow == true || $0.foreign.contains(name) }
    }

    public func read(_ name: String) throws -> [UInt8]? {
        try state.withLock { s in
            if s.foreign.contains(name) { throw StoreError.unusableFile(name) }
            guard let file = s.files[name], file.linkedNow else { return nil }
            let bytes = file.current
            guard bytes.count == Format.fileSize else { throw StoreError.unusableFile(name) }
            return bytes
        }
    }

    public func read(_ name: String, offset: Int, count: Int) throws -> [UInt8] {
        guard let bytes = try read(name) else { throw StoreError.unusableFile(name) }
        return Array(bytes[offset..<offset + count])
    }

    public func create(_ name: String, contents: [UInt8], durable: Bool) throws {
        precondition(contents.count == Format.fileSize && FileName.isWellFormed(name), "storage files have one size and name form")
        try mutate { s in
            guard s.files[name]?.linkedNow != true, !s.foreign.contains(name) else { throw StoreError.exists(name) }
            s.files[name] = File(current: contents, durable: durable ? contents : [], linkedNow: true, linkedDurably: false)
        }
    }

    public func write(_ name: String, offset: Int, bytes: [UInt8]) throws {
        try mutate { s in
            guard s.files[name]?.linkedNow == true, s.files[name]!.current.count == Format.fileSize else { throw StoreError.unusableFile(name) }
            s.files[name]!.current.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        }
    }

    public func sync(_ names: [String]) throws {
        try mutate { s in
            for name in names where s.files[name]?.linkedNow == true { s.files[name]!.durable = s.files[name]!.current }
        }
    }

    public func syncFolder() throws {
        try mutate { s in
            s.files = s.files.compactMapValues { file in
                var file = file
                file.linkedDurably = file.linkedNow
                return file.linkedNow ? file : nil
            }
        }
    }

    public func remove(_ name: String) throws {
        try mutate { s in
            // As on disk: only a regular file of the storage's name form is ever removed.
            if s.foreign.contains(name) || (s.files[name]?.linkedNow == true && !FileName.isWellFormed(name)) {
                throw StoreError.unusableFile(name)
            }
            s.files[name]?.linkedNow = false
        }
    }

    /// One mutation: a crash falls before it (the old bytes) or after it (the new, durable).
    public func replace(_ name: String, contents: [UInt8]) throws {
        precondition(contents.count == Format.fileSize && FileName.isWellFormed(name), "storage files have one size and name form")
        try mutate { s in
            guard s.files[name]?.linkedNow == true, !s.foreign.contains(name) else { throw StoreError.unusableFile(name) }
            s.files[name] = File(current: contents, durable: contents, linkedNow: true, linkedDurably: true)
        }
    }

    /// The file keeps its bytes, synced or not; until `syncFolder` a power loss brings back the
    /// old name and drops the new one. (What the new name held before, durably, is not kept:
    /// the vault never renames onto a name it removed without a folder sync between.)
    public func rename(_ name: String, to newName: String) throws {
        precondition(FileName.isWellFormed(newName), "storage files have one name form")
        try mutate { s in
            guard let file = s.files[name], file.linkedNow, file.current.count == Format.fileSize, !s.foreign.contains(name) else {
                throw StoreError.unusableFile(name)
            }
            guard s.files[newName]?.linkedNow != true, !s.foreign.contains(newName) else { throw StoreError.exists(newName) }
            s.files[newName] = File(current: file.current, durable: file.durable, linkedNow: true, linkedDurably: false)
            s.files[name]!.linkedNow = false
        }
    }

    public func capacity() throws -> (total: UInt64, free: UInt64, available: UInt64) { (1 << 40, 1 << 39, 1 << 39) }

    private func mutate(_ body: (inout State) throws -> Void) throws {
        try state.withLock { s in
            if let left = s.mutationsLeft {
                if left <= 0 { throw StoreError.simulatedCrash }
                s.mutationsLeft = left - 1
            }
            s.mutations += 1
            try body(&s)
        }
    }
}
