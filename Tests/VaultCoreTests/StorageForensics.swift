import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat
import VaultStore

/// Which storage file is which, seen from outside the engine: a vault's files are named from its
/// secrets and a number (docs/FORMAT.md §3.3, §13.4). A format-2 vault's names come from its
/// unlock record and root, which exist only after its first commit: they are looked up when
/// asked, once the record is there.
final class FileNumbers: @unchecked Sendable {  // one test's helper, used by that test only
    let storage: SimulatedStorageFolder
    let seed: UInt8
    let count: UInt64
    private var cached: (unlockName: String?, byName: [String: UInt64])?

    /// Names of file numbers 0 ..< count of the vault opened with `TestVaults.secrets(seed)`.
    init(_ storage: SimulatedStorageFolder, seed: UInt8 = 1, count: UInt64 = 1024) throws {
        self.storage = storage
        self.seed = seed
        self.count = count
    }

    /// Number → name for the vault's current naming (format 1: the pattern's; format 2: RL and NKd).
    var byName: [String: UInt64] {
        let secrets = try! TestVaults.secrets(seed)
        let unlock = try! FormatTwoVault.readUnlock(storage: storage, patternSecrets: secrets)
        if let cached, cached.unlockName == unlock?.name { return cached.byName }
        let names = unlock.map { try! FileNumbers.formatTwoNames($0.record, storage) } ?? secrets
        var byName: [String: UInt64] = [:]
        for number in 0..<count { byName[try! names.fileName(number)] = number }
        if let unlock { byName[unlock.name] = Self.unlockRecord }
        // Before the first root, format 2's names are not known: do not keep them.
        if unlock == nil || byName[try! names.fileName(0)] != nil { cached = (unlock?.name, byName) }
        return byName
    }

    /// The number `number(_:)` gives the unlock record: not a data file.
    static let unlockRecord = UInt64.max

    private static func formatTwoNames(_ record: UnlockRecord, _ storage: SimulatedStorageFolder) throws -> VaultSecrets {
        let vaultKey = try SecretBytes(copying: record.vaultKey), rootLocator = try SecretBytes(copying: record.rootLocator)
        let rootKey = try FormatTwoKeys.rootKey(vaultKey: vaultKey)
        var newest: IndexRootV2?
        for slot: UInt64 in 0...1 {
            guard let file = storage.snapshot[try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot))],
                  let body = try? Sealer.openEnvelope(file, expectedNonce: nil, kind: .indexRoot, version: 2, key: .secret(rootKey),
                                                      seal: .indexRootV2(slot: slot)),
                  let root = try? IndexRootV2.decode(body[...]) else { continue }
            if root.generation > newest?.generation ?? 0 { newest = root }
        }
        let namesKey = try newest.map { try SecretBytes(copying: $0.devices[0].namesKey) }
            ?? FormatTwoKeys.firstDeviceNamesKey(vaultKey: vaultKey)
        return VaultSecrets(rootLocator: rootLocator, rootKey: rootKey, namesKey: namesKey)
    }

    func number(_ name: String) -> UInt64? { byName[name] }
    func isSlot(_ name: String) -> Bool { (number(name) ?? .max) < 2 }
    func isUnlockRecord(_ name: String) -> Bool { number(name) == Self.unlockRecord }
    func name(_ number: UInt64) -> String { byName.first { $0.value == number }!.key }

    /// Data files (neither slot, unlock record nor foreign) among `names`, lowest number first.
    func dataFiles(_ names: some Collection<String>) -> [String] {
        let byName = self.byName
        return names.filter { (byName[$0] ?? 0) >= 2 && byName[$0] != Self.unlockRecord }.sorted { byName[$0]! < byName[$1]! }
    }
}

/// What a change did to the storage: files that appeared, vanished, or got other bytes.
struct SnapshotDiff {
    var added: Set<String> = []
    var removed: Set<String> = []
    var changed: Set<String> = []
    var written: Set<String> { added.union(changed) }

    init(_ before: [String: [UInt8]], _ after: [String: [UInt8]]) {
        for (name, bytes) in after {
            if let old = before[name] { if old != bytes { changed.insert(name) } } else { added.insert(name) }
        }
        for name in before.keys where after[name] == nil { removed.insert(name) }
    }
}

/// The bytes from the first to the last position where `a` and `b` differ.
func differingRange(_ a: [UInt8], _ b: [UInt8]) -> Range<Int>? {
    let count = min(a.count, b.count)
    guard let first = (0..<count).first(where: { a[$0] != b[$0] }) else { return nil }
    let last = (0..<count).last { a[$0] != b[$0] }!
    return first..<last + 1
}

extension SimulatedStorageFolder {
    /// A copy whose every file is what a reader of this one sees now, durably (arrays are shared
    /// until written, so this is cheap).
    func clone() -> SimulatedStorageFolder {
        let copy = SimulatedStorageFolder()
        for (name, bytes) in snapshot { copy.tamper(name, with: bytes) }
        return copy
    }

    /// Puts the folder back to a snapshot, behind any vault's back.
    func restore(_ target: [String: [UInt8]]) {
        let now = snapshot
        for name in now.keys where target[name] == nil { tamper(name, with: nil) }
        for (name, bytes) in target where now[name] != bytes { tamper(name, with: bytes) }
    }

    func bytes(_ name: String) -> [UInt8] { snapshot[name]! }

    func flipBit(_ name: String, at offset: Int, mask: UInt8 = 0x04) {
        var bytes = self.bytes(name)
        bytes[offset] ^= mask
        tamper(name, with: bytes)
    }
}

/// What a vault holds, as a comparable value: every path with its kind, mode and content.
enum TreeEntry: Equatable, CustomStringConvertible {
    case file(mode: UInt32, content: [UInt8])
    case folder(mode: UInt32)
    case symlink(target: [UInt8])
    case other(Vault.ItemType)

    var description: String {
        switch self {
        case .file(let mode, let content): "file \(String(mode, radix: 8)) \(content.count) bytes"
        case .folder(let mode): "folder \(String(mode, radix: 8))"
        case .symlink(let target): "symlink → \(String(decoding: target, as: UTF8.self))"
        case .other(let type): "\(type)"
        }
    }
}

typealias Tree = [String: TreeEntry]

extension Vault {
    /// Every item under the root folder, by path, with file contents read in full.
    func tree() throws -> Tree {
        var tree: Tree = [:]
        func walk(_ folder: UInt64, _ prefix: String) throws {
            for (name, id) in try contents(ofFolder: folder) {
                let path = prefix + String(decoding: name, as: UTF8.self)
                let attributes = try self.attributes(id)
                switch attributes.type {
                case .file:
                    tree[path] = .file(mode: attributes.mode, content: try read(id, offset: 0, count: Int(attributes.size)))
                case .folder:
                    tree[path] = .folder(mode: attributes.mode)
                    try walk(id, path + "/")
                case .symlink: tree[path] = .symlink(target: try symlinkTarget(id))
                default: tree[path] = .other(attributes.type)
                }
            }
        }
        try walk(Vault.rootID, "")
        return tree
    }

    /// The item at a path like "dir/name".
    func id(at path: String) throws -> UInt64 {
        try path.split(separator: "/").reduce(Vault.rootID) { try lookup($0, Array($1.utf8)) }
    }
}

/// A short description of where two trees differ, for failure messages.
func treeDifference(_ a: Tree, _ b: Tree) -> String {
    let paths = Set(a.keys).union(b.keys).sorted().filter { a[$0] != b[$0] }
    return paths.prefix(5).map { "\($0): \(a[$0].map(\.description) ?? "absent") vs \(b[$0].map(\.description) ?? "absent")" }
        .joined(separator: "; ")
}

/// Fails unless `body` throws `VaultError.damagedData` (never other bytes, never another error).
func expectDamagedData(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                       _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected damagedData, the read succeeded. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    } catch VaultError.damagedData {
    } catch {
        Issue.record("expected damagedData, got \(error). \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    }
}

/// Fails unless `body` throws `VaultError.damagedIndex`.
func expectDamagedIndex(_ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected damagedIndex, it succeeded. \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    } catch VaultError.damagedIndex {
    } catch {
        Issue.record("expected damagedIndex, got \(error). \(comment.map { "\($0)" } ?? "")", sourceLocation: sourceLocation)
    }
}

/// Fast content: the deterministic stream, so a test of many megabytes does not spend its time
/// making them.
func streamContent(_ count: Int, seed: UInt8) -> [UInt8] {
    try! DeterministicRandom(seed: [UInt8](repeating: seed, count: 32)).bytes(count)
}

/// Compares without printing megabytes when it fails: says only what differs.
func expectSame(_ a: [UInt8], _ b: [UInt8], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard a != b else { return }
    let at = differingRange(a, b).map { "first difference at \($0.lowerBound)" } ?? "one is a prefix of the other"
    Issue.record("\(what): \(a.count) vs \(b.count) bytes, \(at)", sourceLocation: sourceLocation)
}

func expectSame(_ a: Tree, _ b: Tree, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard a != b else { return }
    Issue.record("\(what): trees differ: \(treeDifference(a, b))", sourceLocation: sourceLocation)
}

/// The storage is byte for byte what it was.
func expectUnchanged(_ storage: SimulatedStorageFolder, since before: [String: [UInt8]], _ what: String,
                     sourceLocation: SourceLocation = #_sourceLocation) {
    let diff = SnapshotDiff(before, storage.snapshot)
    guard !diff.added.isEmpty || !diff.removed.isEmpty || !diff.changed.isEmpty else { return }
    Issue.record("\(what): the storage changed: \(diff.added.count) added, \(diff.removed.count) removed, \(diff.changed.count) rewritten",
                 sourceLocation: sourceLocation)
}

/// Where a pack member of `length` sealed bytes lies, given the range where the pack changed
/// when it was written and where it must start (a new pack fills from 0, an existing one from the
/// end of its last member, docs/FORMAT.md §7.2). A byte of the member may equal the random byte
/// it replaced, so the changed range alone can be a byte or two short at either end.
func memberRange(changed: Range<Int>, length: Int, start: Int,
                 sourceLocation: SourceLocation = #_sourceLocation) throws -> Range<Int> {
    try #require(changed.lowerBound >= start && changed.upperBound <= start + length && changed.count > length - 8,
                 "changed bytes \(changed) do not fit a member of \(length) bytes at \(start)", sourceLocation: sourceLocation)
    return start..<start + length
}
