import VaultCrypto
import VaultFormat
import VaultStore

/// A new group whose files are the chunks written behind a sequential write (docs/FORMAT.md
/// §3.3): each chunk is sealed as its file and written unnamed where the storage can (else kept
/// in memory), and the 16 files are named together once
/// every number has been taken and its chunk sealed, or before the next commit, the numbers no
/// chunk took holding random bytes. Data is written once, never over a random pre-fill, and the
/// group appears whole. Until the group exists, its chunks' bytes stay readable in their flights.
struct GroupAssembly {
    let numbers: Range<UInt64>
    let names: [String]
    /// Numbers something not ours holds (R-SEC-4): never handed out, never written.
    let present: Set<UInt64>
    /// Numbers not handed out yet, the lowest last.
    private(set) var untaken: [UInt64]
    /// Handed out, the chunk not sealed yet.
    private(set) var outstanding: Set<UInt64> = []
    private(set) var files: [UInt64: GroupFile] = [:]
    /// The write-behinds whose files are here, with why sealing failed: published once the
    /// group exists.
    private(set) var writes: [(write: ChunkWrite, failure: (any Error)?)] = []

    init(numbers: Range<UInt64>, names: [String], present: Set<UInt64>) {
        self.numbers = numbers
        self.names = names
        self.present = present
        untaken = numbers.reversed().filter { !present.contains($0) }
    }

    func contains(_ number: UInt64) -> Bool { numbers.contains(number) }
    var hasRoom: Bool { !untaken.isEmpty }
    /// Every number taken and every taken chunk sealed (or failed): the group can be made.
    var isFull: Bool { untaken.isEmpty && outstanding.isEmpty }
    /// No sealing is under way: at a commit the group is made with what it has.
    var isIdle: Bool { outstanding.isEmpty }

    mutating func take() -> UInt64? {
        guard let number = untaken.popLast() else { return nil }
        outstanding.insert(number)
        return number
    }

    /// A number whose write-behind could not be prepared: handed out again.
    mutating func giveBack(_ number: UInt64) {
        outstanding.remove(number)
        untaken.append(number)
        untaken.sort(by: >)
    }

    /// The sealed file of a write-behind, or why sealing failed (the number then gets random
    /// bytes, and the chunk stays dirty).
    mutating func deposit(_ write: ChunkWrite, _ sealed: Result<GroupFile, any Error>) {
        outstanding.remove(write.number)
        switch sealed {
        case .success(let file):
            files[write.number] = file
            writes.append((write, nil))
        case .failure(let error):
            writes.append((write, error))
        }
    }

    /// What to make outside the vault's lock: every number but `present`, the untaken ones and
    /// those whose sealing failed with random bytes.
    func creation(random: any RandomSource) -> GroupCreation {
        let members = zip(numbers, names).filter { !present.contains($0.0) }
        return GroupCreation(numbers: numbers, untaken: untaken, members: members.map { (number: $0.0, name: $0.1, file: files[$0.0]) },
                             writes: writes, random: random)
    }
}

/// A sealed chunk's file in an assembly: written unnamed, or its bytes where the storage has no
/// unnamed files.
enum GroupFile: Sendable {
    case written(UnnamedFile)
    case contents([UInt8])

    /// Written unnamed if the storage can.
    static func store(_ sealed: [UInt8], in storage: any StorageFolder) throws -> GroupFile {
        try storage.writeUnnamed(sealed).map(GroupFile.written) ?? .contents(sealed)
    }
}

/// The files of an assembled group, made outside the lock (`StorageFolder.createGroup`).
struct GroupCreation: Sendable {
    let numbers: Range<UInt64>
    /// Numbers no chunk took: free once the group exists.
    let untaken: [UInt64]
    let members: [(number: UInt64, name: String, file: GroupFile?)]
    let writes: [(write: ChunkWrite, failure: (any Error)?)]
    let random: any RandomSource

    var created: [UInt64] { members.map(\.number) }

    func run(_ storage: any StorageFolder) throws {
        var files: [(name: String, contents: [UInt8])] = [], written: [(name: String, file: UnnamedFile)] = []
        for member in members {
            switch member.file {
            case .written(let file): written.append((member.name, file))
            case .contents(let bytes): files.append((member.name, bytes))
            case nil: files.append((member.name, try random.bytes(Format.fileSize)))
            }
        }
        try storage.createGroup(files, written: written)
    }
}
