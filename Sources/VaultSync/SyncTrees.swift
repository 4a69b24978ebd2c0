import VaultCore
import VaultCrypto
import VaultFormat

/// The vault's items as the merge's trees, and the merge's result back as the vault's items
/// (docs/SYNC-DESIGN.md §2, FORMAT.md §13.11). Content references are the items' digests; the
/// base knows only name hashes, so a base name is the side's name whose hash it is.
struct SyncTrees {
    let local: [UInt64: SyncEntry]
    let remote: [UInt64: SyncEntry]

    init(local: [SyncEntry], remote: [SyncEntry]) {
        self.local = Dictionary(local.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.remote = Dictionary(remote.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    static func tree(_ entries: [UInt64: SyncEntry]) -> SyncTree {
        SyncTree(entries.values.map { entry in
            SyncItem(id: entry.id, parent: entry.parent, name: entry.id == SyncTree.rootID ? "" : NameCoding.string(entry.name),
                     kind: kind(entry.type), version: entry.version, changedBy: entry.changedBy, content: ContentReference(entry.digest))
        })
    }

    /// The base's items with the names of the side whose name hash matches; a name neither side
    /// still has stands in as a value no real name equals.
    func base(_ base: SyncBase) -> SyncTree {
        SyncTree(base.items.map { item in
            let sides = [local[item.id], remote[item.id]].compactMap { $0 }
            let named = sides.first { SHA256.hash($0.name).prefix(SyncBase.hashSize).elementsEqual(item.nameHash) }
            let name = item.id == SyncTree.rootID ? "" : named.map { NameCoding.string($0.name) }
                ?? "\u{0}" + item.nameHash.map { String($0, radix: 16) }.joined()
            return SyncItem(id: item.id, parent: item.parent, name: name, kind: sides.first.map { Self.kind($0.type) } ?? .file,
                            version: item.version, changedBy: 0, content: ContentReference(item.digest))
        })
    }

    /// The three-way merge of the two sides against `base`, with what the `withdrawn` devices
    /// changed on the remote since the base left out (`WithdrawnChanges`). Payloads still come
    /// from the sides as they are (`mergedItems`): an item put back has the local payload.
    func merge(base: SyncBase?, withdrawn: Set<UInt16>, context: TreeMerge.Context) -> TreeMerge.Result {
        WithdrawnChanges.merge(base: base.map(self.base), local: Self.tree(local), remote: Self.tree(remote), devices: withdrawn, context: context)
    }

    /// The remote items whose content `merge` with the same arguments does not take
    /// (`WithdrawnChanges.leftOut`).
    func leftOut(base: SyncBase?, withdrawn: Set<UInt16>, context: TreeMerge.Context) -> Set<UInt64> {
        WithdrawnChanges.leftOut(from: Self.tree(remote), base: base.map(self.base), devices: withdrawn, local: Self.tree(local), context: context)
    }

    /// Each merged item and the side whose payload it has (same digest: the same payload).
    func mergedItems(_ result: SyncTree) -> [MergedItem] {
        var localByDigest: [[UInt8]: UInt64] = [:], remoteByDigest: [[UInt8]: UInt64] = [:]
        for entry in local.values.sorted(by: { $0.id < $1.id }) where localByDigest[entry.digest] == nil { localByDigest[entry.digest] = entry.id }
        for entry in remote.values.sorted(by: { $0.id < $1.id }) where remoteByDigest[entry.digest] == nil { remoteByDigest[entry.digest] = entry.id }
        return result.items.values.sorted { $0.id < $1.id }.compactMap { item in
            let digest = item.content.bytes
            let source: (MergedItem.Source, UInt64)
            if remote[item.id]?.digest == digest {
                source = (.remote, item.id)
            } else if local[item.id]?.digest == digest {
                source = (.local, item.id)
            } else if let id = localByDigest[digest] {
                source = (.local, id)
            } else if let id = remoteByDigest[digest] {
                source = (.remote, id)
            } else {
                return nil
            }
            return MergedItem(id: item.id, parent: item.parent, name: item.id == SyncTree.rootID ? [] : NameCoding.bytes(item.name),
                              version: item.version, changedBy: item.changedBy, source: source.0, sourceID: source.1)
        }
    }

    static func kind(_ type: Vault.ItemType) -> SyncItem.Kind {
        switch type {
        case .folder: .folder
        case .file: .file
        case .symlink: .symlink
        default: .other
        }
    }
}

extension TreeMerge.Context {
    /// A merge into the vault `view` shows, at `time`.
    init(_ view: LocalSyncView, time: Int64) {
        self.init(localDevice: view.localDevice, deviceNames: view.deviceNames, time: time, nextItemID: view.nextItemID)
    }
}

/// Names are bytes in a vault and strings in the merge. A name that is not UTF-8 (or holds a
/// scalar of the escape range) becomes one scalar U+F700 + byte per byte, and back.
enum NameCoding {
    static let escape: UInt32 = 0xF700

    static func string(_ bytes: [UInt8]) -> String {
        if let text = String(validating: bytes, as: UTF8.self),
           !text.unicodeScalars.contains(where: { (escape...escape + 0xFF).contains($0.value) }) {
            return text
        }
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(Unicode.Scalar(escape + UInt32(byte))!) }
        return String(scalars)
    }

    static func bytes(_ string: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for scalar in string.unicodeScalars {
            if (escape...escape + 0xFF).contains(scalar.value) {
                bytes.append(UInt8(scalar.value - escape))
            } else {
                bytes += Array(String(scalar).utf8)
            }
        }
        return bytes
    }
}
