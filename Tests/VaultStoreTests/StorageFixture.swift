import DotSafeTestSupport
import Foundation
import Glibc
import VaultFormat
import VaultStore

/// The implementations of `StorageFolder` that the conformance suite runs over.
enum StorageKind: String, CaseIterable, Sendable {
    case disk, simulated
    /// A `CountingStorageFolder` over a simulated one, as the I/O-count tests use it.
    case counting
}

/// What a hostile folder may hold at a name behind DotSafe's back (FORMAT.md §3): never listed,
/// never followed, never written, and (other than a regular file) never removed.
enum HostileEntry: String, CaseIterable, Sendable {
    case symbolicLink, wrongSize, folder, fifo
    /// A regular file of the storage size whose name is not of the storage's form.
    case badName

    var name: String {
        switch self {
        case .badName: "NOT-A-STORAGE-FILE-NAME-26"
        default: FileName.encode([UInt8](repeating: UInt8(HostileEntry.allCases.firstIndex(of: self)! + 1), count: Format.nameBytes))
        }
    }

    var isRegularFile: Bool { self == .wrongSize || self == .badName }

    /// What the planted file holds: recognisable, so that a write or a follow shows.
    var contents: [UInt8] {
        switch self {
        case .symbolicLink: [UInt8](repeating: 0x11, count: Format.fileSize)
        case .wrongSize: [UInt8](repeating: 0x22, count: Format.fileSize - 1)
        case .badName: [UInt8](repeating: 0x33, count: Format.fileSize)
        case .folder, .fifo: []
        }
    }
}

/// A new, empty storage folder of one implementation, and a way to plant hostile entries in it
/// and to check they are as planted.
final class StorageFixture {
    let kind: StorageKind
    let folder: any StorageFolder
    private let path: String?
    private let simulated: SimulatedStorageFolder?

    init(_ kind: StorageKind) throws {
        self.kind = kind
        switch kind {
        case .disk:
            let path = try TestFolder.make("store")
            self.path = path
            simulated = nil
            try FileManager.default.createDirectory(atPath: path + "/storage", withIntermediateDirectories: false)
            folder = try DiskStorageFolder(path: path + "/storage")
        case .simulated, .counting:
            path = nil
            let memory = SimulatedStorageFolder()
            simulated = memory
            folder = kind == .counting ? CountingStorageFolder(memory) : memory
        }
    }

    deinit { if let path { TestFolder.remove(path) } }

    func plant(_ entry: HostileEntry) throws {
        if let simulated {
            if entry.isRegularFile { simulated.tamper(entry.name, with: entry.contents) } else { simulated.plantForeign(entry.name) }
            return
        }
        let at = storagePath + "/" + entry.name
        switch entry {
        case .symbolicLink:
            try Data(entry.contents).write(to: URL(fileURLWithPath: outsidePath))
            try FileManager.default.createSymbolicLink(atPath: at, withDestinationPath: outsidePath)
        case .wrongSize, .badName: try Data(entry.contents).write(to: URL(fileURLWithPath: at))
        case .folder: try FileManager.default.createDirectory(atPath: at, withIntermediateDirectories: false)
        case .fifo: guard mkfifo(at, 0o600) == 0 else { throw HarnessError("mkfifo \(at): errno \(errno)") }
        }
    }

    /// True when the entry is still what `plant` made: same type, same bytes (and, for a link,
    /// the same bytes in the file it points to).
    func isIntact(_ entry: HostileEntry) throws -> Bool {
        if let simulated {
            guard try simulated.entryExists(entry.name) else { return false }
            return !entry.isRegularFile || simulated.snapshot[entry.name] == entry.contents
        }
        let at = storagePath + "/" + entry.name
        var info = stat()
        guard lstat(at, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        switch entry {
        case .symbolicLink:
            let target = try FileManager.default.destinationOfSymbolicLink(atPath: at)
            return type == S_IFLNK && target == outsidePath && FileManager.default.contents(atPath: outsidePath) == Data(entry.contents)
        case .wrongSize, .badName: return type == S_IFREG && FileManager.default.contents(atPath: at) == Data(entry.contents)
        case .folder: return type == S_IFDIR
        case .fifo: return type == S_IFIFO
        }
    }

    private var storagePath: String { path! + "/storage" }
    private var outsidePath: String { path! + "/outside" }
}
