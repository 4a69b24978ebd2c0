import VaultCore
import VaultCrypto
import VaultFormat

/// The seed corpus (Tests/FuzzCorpus/<target>/): valid encodings made by the encoders, and edge
/// cases. `DotSafeFuzz seeds DIR` writes them; findings are added to the corpus by hand.
public enum FuzzSeeds {
    static let nonce = [UInt8](repeating: 0x4e, count: Format.sealNonceSize)
    static let key = [UInt8](repeating: 0x6b, count: Format.keySize)

    static func file(_ size: UInt64, _ layout: ItemRecord.Layout, in parent: UInt64, _ name: String) -> ItemRecord {
        ItemRecord(type: .file, mode: 0o644, uid: 1000, gid: 1000, atime: 1, mtime: 2, ctime: 3, size: size,
                   links: [.init(parentID: parent, name: Array(name.utf8))], itemKey: key, layout: layout)
    }

    static let member = ItemRecord.Member(fileNumber: 11, offset: 0, sealedLength: 21, nonce: nonce)

    /// Records of a small vault: root folder, a folder, an empty file, a packed file, a chunked
    /// file with two chunks and a hole, a symbolic link, a FIFO with two names and an xattr.
    static var records: [(key: RecordKey, value: [UInt8])] {
        let root = ItemRecord(type: .folder, mode: 0o755, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0)
        let folder = ItemRecord(type: .folder, mode: 0o700, uid: 0, gid: 0, atime: -1, mtime: 0, ctime: 0,
                                links: [.init(parentID: 1, name: Array("docs".utf8))])
        let link = ItemRecord(type: .symlink, mode: 0o777, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0, size: 8,
                              links: [.init(parentID: 2, name: Array("link".utf8))], target: Array("../a.txt".utf8))
        let fifo = ItemRecord(type: .fifo, mode: 0o600, uid: 0, gid: 0, atime: 0, mtime: 0, ctime: 0,
                              links: [.init(parentID: 1, name: Array("p".utf8)), .init(parentID: 2, name: Array("p".utf8))],
                              xattrs: [(Array("user.x".utf8), [1, 2, 3])])
        let segment = ChunkSegment.encode([.init(indexInSegment: 0, ref: SealedRef(fileNumber: 12, nonce: nonce)),
                                           .init(indexInSegment: 2, ref: SealedRef(fileNumber: 13, nonce: nonce))])
        return [
            (.item(1), root.encode()),
            (.item(2), folder.encode()),
            (.item(3), file(0, .empty, in: 1, "empty").encode()),
            (.item(4), file(5, .packed(member), in: 1, "a.txt").encode()),
            (.item(5), file(3 * UInt64(Format.payloadSize), .chunked, in: 2, "big").encode()),
            (.segment(5, 0), segment),
            (.item(6), link.encode()),
            (.item(7), fifo.encode()),
        ]
    }

    /// Target name → seeds (file name → bytes).
    public static func all() -> [String: [String: [UInt8]]] {
        formatOne().merging(indexThree()) { a, _ in a }
    }

    static func formatOne() -> [String: [String: [UInt8]]] {
        let records = records
        let page = IndexPage.encode(records)
        var twoPages = ByteWriter()
        twoPages.lp32(IndexPage.encode(Array(records[0..<4])))
        twoPages.lp32(IndexPage.encode(Array(records[4...])))
        var onePage = ByteWriter()
        onePage.lp32(page)
        var rootOnly = ByteWriter()
        rootOnly.lp32(IndexPage.encode([records[0]]))
        let root = IndexRoot(generation: 7, vaultKey: key, nextFileNumber: 64, nextItemID: 8, coverCount: 3,
                             ownedGroups: [GroupRange(first: 0, count: 1), GroupRange(first: 2, count: 2)],
                             releasing: [16, 17], pages: [SealedRef(fileNumber: 5, nonce: nonce), SealedRef(fileNumber: 33, nonce: nonce)])
        let minimalRoot = IndexRoot(generation: 1, vaultKey: key, nextFileNumber: 16, nextItemID: 2, coverCount: 2,
                                    ownedGroups: [GroupRange(first: 0, count: 1)], releasing: [], pages: [])
        let salt = KeyringFile.Item(tag: "dotsafe.pattern-salt", attributes: [("kdf", "pbkdf2-hmac-sha256"), ("rounds", "600000")],
                                    secret: [UInt8](repeating: 0x73, count: 32))
        let other = KeyringFile.Item(tag: "other", attributes: [], secret: [9])
        let segmentFull = ChunkSegment.encode((0..<Format.chunksPerSegment).map {
            .init(indexInSegment: $0, ref: SealedRef(fileNumber: UInt64(100 + $0), nonce: nonce))
        })
        func block(_ kind: InnerBlock.Kind, _ body: [UInt8]) -> [UInt8] {
            // The harness pads with zeros to the block size: only the header and body matter.
            Array(InnerBlock.encode(kind: kind, body: body[...]) { [UInt8](repeating: 0x55, count: $0) }
                .prefix(Format.innerHeaderSize + body.count))
        }
        return [
            "index-root": ["valid": root.encode(), "minimal": minimalRoot.encode(), "empty": []],
            "index-page": ["valid": page, "one-record": IndexPage.encode([records[0]]), "count-zero": [0, 0, 0, 0]],
            "item-record": Dictionary(uniqueKeysWithValues: records.filter { $0.key.sub == 0 }.map { ("item-\($0.key.itemID)", $0.value) }),
            "chunk-segment": ["valid": ChunkSegment.encode([.init(indexInSegment: 1023, ref: SealedRef(fileNumber: 2, nonce: nonce))]),
                              "full": segmentFull],
            "inner-block": ["chunk": block(.chunk, [1, 2, 3]), "page": block(.indexPage, page), "root": block(.indexRoot, root.encode()),
                            "empty-body": block(.chunk, [])],
            "keyring-file": ["salt": KeyringFile(items: [salt]).encode(checksum: SHA256.hash),
                             "two-items": KeyringFile(items: [salt, other]).encode(checksum: SHA256.hash),
                             "no-items": KeyringFile(items: []).encode(checksum: SHA256.hash)],
            "keyring-export": ["valid": KeyringExport(rounds: 600_000, salt: key, nonce: nonce,
                                                      sealed: [UInt8](repeating: 0xee, count: 80)).encode()],
            "index": ["one-page": onePage.bytes, "two-pages": twoPages.bytes, "root-only": rootOnly.bytes],
            "pattern": ["valid": Array("b2-c2-d3-d4-c4-b4-a5".utf8), "spaces": Array("A1 B2 c3,d4".utf8),
                        "long": Array("a1-a2-a3-a4-a5-b5-b4-b3-b2-b1-c1-c2-c3-c4-c5-d5-d4-d3-d2-d1-e1-e2-e3-e4-e5".utf8),
                        "bad": Array("a1-a1-z9".utf8)],
            "contact-code": ["printed": Array(ContactCode(publicKey: key).text.utf8), "compact": Array(ContactCode(publicKey: key).compact.utf8),
                             "upper-spaced": Array(ContactCode(publicKey: Array(nonce.prefix(8)) + Array(key.prefix(24))).text
                                .uppercased().split(separator: "-").joined(separator: " ").utf8),
                             "wrong-prefix": Array("age1ps5s0qzvfxzn4gayt0hwtg0hhtgxm7wsdycup4a8t5j5ca25mfe4qs5urg6".utf8)],
            "grant-block": ["valid": grantBlock([]), "optional": grantBlock([.init(tag: 1024, value: Array("optional".utf8))])],
        ]
    }

    /// A grant block's header and body (the harness pads it with zeros to its size).
    static func grantBlock(_ optional: [IndexRootV2.Extension]) -> [UInt8] {
        let body = UnlockRecord(role: .grant, vaultKey: key, rootLocator: Array(key.reversed()), ownFile: FileRef(device: 1, number: 40),
                                optional: optional).encode()
        return Array(GrantFile.block(body: body).prefix(GrantFile.blockHeaderSize + body.count))
    }
}
