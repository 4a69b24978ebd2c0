import Testing
import VaultCore
import VaultCrypto
import VaultFormat

/// Everything a holder of the pattern key can open in a format-2 storage, done from
/// docs/FORMAT.md §13 alone (not through VaultCore): it follows the chain (unlock record, both
/// slots, every page key it reaches, every recorded chunk and member key), then tries every key
/// it found against every storage file, as every kind of structure, at every recorded offset.
struct FormatTwoCoercer {
    let files: [String: [UInt8]]
    let locator: SecretBytes
    let indexKey: SecretBytes

    init(files: [String: [UInt8]], patternKey: [UInt8]) throws {
        self.files = files
        let key = try SecretBytes(copying: patternKey)
        locator = try HKDF.deriveKey(from: key, salt: [], info: Label.locator, count: Format.keySize)
        indexKey = try HKDF.deriveKey(from: key, salt: [], info: Label.indexKey, count: Format.keySize)
    }

    /// What it found: every plaintext, and the keys found in some page but not in the pages of
    /// the newest root (a key to old content).
    func recover() throws -> Coercer.Recovery {
        var recovery = Coercer.Recovery()
        var vaultKeys: [[UInt8]] = []
        // A device's record and, where the files include a remote's, the remote's (§13.11).
        for location in ["local", "remote"].map({ Array($0.utf8) }) {
            for file in files.values {
                guard let body = openEnvelope(file, key: indexKey, version: 2, label: Label.sealUnlock,
                                              context: [UInt8(location.count)] + location, kind: .unlockRecord),
                      let record = try? UnlockRecord.decode(body[...]) else { continue }
                recovery.plaintexts.append(body)
                if location == Array("remote".utf8) { recovery.remoteRecords += 1 }
                if !vaultKeys.contains(record.vaultKey) { vaultKeys.append(record.vaultKey) }
            }
        }
        var roots: [IndexRootV2] = []
        var formatOnePageKeys: [SecretBytes] = []
        for vaultKey in vaultKeys {
            let vk = try SecretBytes(copying: vaultKey)
            let rootKey = try HKDF.deriveKey(from: vk, salt: [], info: Label.rootKey, count: Format.keySize)
            // Format 1's page key from the same vault key, in case anything was sealed with it.
            formatOnePageKeys.append(try HKDF.deriveKey(from: vk, salt: [], info: Label.pageKey, count: Format.keySize))
            for file in files.values {
                for slot: UInt8 in 0...1 {
                    guard let body = openEnvelope(file, key: rootKey, version: 2, label: Label.sealIndexRootV2, context: [slot], kind: .indexRoot),
                          let root = try? IndexRootV2.decode(body[...]) else { continue }
                    recovery.plaintexts.append(body)
                    roots.append(root)
                }
            }
        }
        // Every page key reachable from any root, and from any page they open, at any level.
        var pageKeys: [[UInt8]] = roots.flatMap { $0.top.map(\.pageKey) }
        var chunkKeys: [[UInt8]] = [], memberKeys: [(key: [UInt8], offset: Int, length: Int)] = []
        // Upgraded items (§13.8): a format-1 item key, and members of layout 3 it opens.
        var itemKeys: [(id: UInt64, key: [UInt8])] = [], formatOneMembers: [(id: UInt64, key: [UInt8], member: ItemRecord.Member)] = []
        var keysFound = Set<[UInt8]>(pageKeys)
        var largestChunk = 0
        var tried = 0
        while tried < pageKeys.count {
            let key = try SecretBytes(copying: pageKeys[tried])
            tried += 1
            for file in files.values {
                for level: UInt8 in 0...IndexRootV2.maxLevel {
                    guard let body = openEnvelope(file, key: key, version: 2, label: Label.sealIndexPageV2, context: [level], kind: .indexPage),
                          let node = try? IndexPageV2.decode(body[...], level: level) else { continue }
                    recovery.plaintexts.append(body)
                    switch node {
                    case .interior(let refs):
                        for ref in refs where keysFound.insert(ref.pageKey).inserted { pageKeys.append(ref.pageKey) }
                    case .leaf(let records):
                        for (recordKey, value) in records {
                            if recordKey.sub == 0 {
                                guard let record = try? ItemRecord.decode(value), record.type == .file else { continue }
                                largestChunk = max(largestChunk, Int(min(record.size, 1 << 40) / UInt64(Format.payloadSize)))
                                if !record.itemKey.isEmpty && keysFound.insert(record.itemKey).inserted {
                                    itemKeys.append((recordKey.itemID, record.itemKey))
                                }
                                if case .packed(let member) = record.layout {
                                    if member.key.isEmpty {
                                        formatOneMembers.append((recordKey.itemID, record.itemKey, member))
                                    } else if keysFound.insert(member.key).inserted {
                                        memberKeys.append((member.key, Int(member.offset), Int(member.sealedLength)))
                                    }
                                }
                            } else if let entries = try? ChunkSegmentV2.decode(value) {
                                for entry in entries { if case .key(let key) = entry.seal, keysFound.insert(key).inserted { chunkKeys.append(key) } }
                            }
                        }
                    }
                }
            }
        }
        recovery.oldItemKeys = Array(keysFound.subtracting(try currentKeys(roots)))
        // The sync base (§13.11) of every root that has one: its pieces hold no key.
        for root in roots {
            guard let value = root.extensions.first(where: { $0.tag == SyncBase.extensionTag })?.value,
                  let header = try? SyncBase.Header.decode(value) else { continue }
            for (index, piece) in header.pieces.enumerated() {
                let context = SealContext.syncBase(piece: index)
                for file in files.values {
                    guard let body = openEnvelope(file, key: try SecretBytes(copying: piece.key), version: 2, label: context.label,
                                                  context: context.context, kind: .syncBase) else { continue }
                    recovery.plaintexts.append(body)
                    recovery.syncBases += 1
                    recovery.keysInSyncBase += keysFound.filter { key in
                        body.count >= key.count && (0...(body.count - key.count)).contains { Array(body[$0..<$0 + key.count]) == key }
                    }.count
                }
            }
        }
        for key in chunkKeys {
            let secret = try SecretBytes(copying: key)
            for file in files.values {
                for index in 0...UInt64(largestChunk + 1) {
                    if let body = openEnvelope(file, key: secret, version: 2, label: Label.sealChunkV2, context: bytes(index), kind: .chunk) {
                        recovery.plaintexts.append(body)
                    }
                }
            }
        }
        let offsets = Set(memberKeys.map { ($0.offset, $0.length) }.map { [$0.0, $0.1] })
        for (key, _, _) in memberKeys {
            let secret = try SecretBytes(copying: key)
            for file in files.values {
                for place in offsets where place[0] + place[1] <= file.count && place[1] > 40 {
                    let sealed = file[place[0]..<place[0] + place[1]]
                    if let content = open(sealed.dropFirst(24), nonce: Array(sealed.prefix(24)), key: secret, label: Label.sealMemberV2, context: []) {
                        recovery.plaintexts.append(content)
                    }
                }
            }
        }
        // Format-1 seals of upgraded items (§7.1, §7.2): every file as a chunk of every index,
        // and every file at each recorded member's place with its recorded nonce.
        for (id, key) in itemKeys {
            let secret = try SecretBytes(copying: key)
            for file in files.values {
                for index in 0...UInt64(largestChunk + 1) {
                    if let body = openEnvelope(file, key: secret, version: 1, label: Label.sealChunk, context: bytes(id) + bytes(index),
                                               kind: .chunk) {
                        recovery.plaintexts.append(body)
                    }
                }
            }
        }
        for (id, key, member) in formatOneMembers {
            let secret = try SecretBytes(copying: key), place = Int(member.offset)..<Int(member.offset) + Int(member.sealedLength)
            for file in files.values where place.upperBound <= file.count {
                if let content = open(file[place], nonce: member.nonce, key: secret, label: Label.sealMember, context: bytes(id)) {
                    recovery.plaintexts.append(content)
                }
            }
        }
        for key in formatOnePageKeys {
            for file in files.values {
                if let body = openEnvelope(file, key: key, version: 1, label: Label.sealIndexPage, context: [], kind: .indexPage) {
                    recovery.plaintexts.append(body)
                }
            }
        }
        return recovery
    }

    /// The keys the newest root leads to, following its refs to the files that hold its pages.
    private func currentKeys(_ roots: [IndexRootV2]) throws -> Set<[UInt8]> {
        guard let newest = roots.max(by: { $0.generation < $1.generation }) else { return [] }
        let namesKey = try SecretBytes(copying: newest.devices[0].namesKey)
        var keys = Set<[UInt8]>()
        func visit(_ refs: [PageRef], level: UInt8) throws {
            for ref in refs {
                keys.insert(ref.pageKey)
                let name = FileName.encode(try HKDF.deriveBytes(from: namesKey, salt: [], info: Label.fileName + bytes(ref.file.number),
                                                                count: Format.nameBytes))
                guard let file = files[name],
                      let body = openEnvelope(file, key: try SecretBytes(copying: ref.pageKey), version: 2, label: Label.sealIndexPageV2,
                                              context: [level], kind: .indexPage),
                      let node = try? IndexPageV2.decode(body[...], level: level) else { continue }
                switch node {
                case .interior(let children): try visit(children, level: level - 1)
                case .leaf(let records):
                    for (recordKey, value) in records {
                        if recordKey.sub == 0, let record = try? ItemRecord.decode(value) {
                            if !record.itemKey.isEmpty { keys.insert(record.itemKey) }
                            if case .packed(let member) = record.layout, !member.key.isEmpty { keys.insert(member.key) }
                        } else if recordKey.sub > 0, let entries = try? ChunkSegmentV2.decode(value) {
                            for entry in entries { if case .key(let key) = entry.seal { keys.insert(key) } }
                        }
                    }
                }
            }
        }
        try visit(newest.top, level: newest.topLevel)
        return keys
    }

    /// §4 and §13.2: nonce, then the sealed inner block; nil when it does not open as `kind`.
    private func openEnvelope(_ file: [UInt8], key: SecretBytes, version: UInt8, label: [UInt8], context: [UInt8],
                              kind: InnerBlock.Kind) -> [UInt8]? {
        guard file.count == Format.fileSize,
              let inner = open(file[Format.ciphertextOffset...], nonce: Array(file[0..<Format.sealNonceSize]), key: key,
                               label: label, context: context) else { return nil }
        return (try? InnerBlock.decode(inner, expecting: kind, version: version)).map(Array.init)
    }

    /// §2.3: the one-time subkey from the first half of the nonce, GCM with the second.
    private func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: SecretBytes, label: [UInt8], context: [UInt8]) -> [UInt8]? {
        guard let subkey = try? HKDF.deriveKey(from: key, salt: [], info: Label.subkey + nonce[0..<12], count: Format.keySize) else { return nil }
        return try? AESGCM.open(sealed, key: subkey, nonce: Array(nonce[12...]), aad: label + context)
    }

    private func bytes(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
}
