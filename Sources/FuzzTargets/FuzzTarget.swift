import VaultCore
import VaultCrypto
import VaultFormat

/// One fuzz target per decoder of bytes that come from disk (or from the user, for the pattern).
/// Each function must never trap on any input: throwing is the decoders' way to refuse, and is
/// swallowed here. Where a decoder accepts the bytes, its encoder must give them back exactly
/// (every structure of docs/FORMAT.md has one encoding): a mismatch traps, as a finding.
public struct FuzzTarget: Sendable {
    public let name: String
    public let run: @Sendable ([UInt8]) -> Void

    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "index-root", run: indexRoot),
        FuzzTarget(name: "index-page", run: indexPage),
        FuzzTarget(name: "item-record", run: itemRecord),
        FuzzTarget(name: "chunk-segment", run: chunkSegment),
        FuzzTarget(name: "inner-block", run: innerBlock),
        FuzzTarget(name: "keyring-file", run: keyringFile),
        FuzzTarget(name: "keyring-export", run: keyringExport),
        FuzzTarget(name: "index", run: index),
        FuzzTarget(name: "pattern", run: pattern),
        FuzzTarget(name: "contact-code", run: contactCode),
        FuzzTarget(name: "grant-block", run: grantBlock),
    ] + indexThree

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    public static func indexRoot(bytes: [UInt8]) {
        guard let root = try? IndexRoot.decode(bytes[...]) else { return }
        roundTrip(root.encode(), bytes, "index root")
    }

    public static func indexPage(bytes: [UInt8]) {
        guard let records = try? IndexPage.decode(bytes[...]) else { return }
        roundTrip(IndexPage.encode(records), bytes, "index page")
    }

    public static func itemRecord(bytes: [UInt8]) {
        guard let record = try? ItemRecord.decode(bytes) else { return }
        roundTrip(record.encode(), bytes, "item record")
    }

    public static func chunkSegment(bytes: [UInt8]) {
        guard let entries = try? ChunkSegment.decode(bytes) else { return }
        roundTrip(ChunkSegment.encode(entries), bytes, "chunk segment")
    }

    /// An inner block is always `Format.innerBlockSize` bytes: the input is its start, the rest
    /// zeros (and the input as it is, which must be refused unless it has that size).
    public static func innerBlock(bytes: [UInt8]) {
        _ = try? InnerBlock.decode(bytes, expecting: .chunk)
        var block = Array(bytes.prefix(Format.innerBlockSize))
        block.append(contentsOf: repeatElement(0, count: Format.innerBlockSize - block.count))
        for kind in [InnerBlock.Kind.indexRoot, .indexPage, .chunk] {
            guard let body = try? InnerBlock.decode(block, expecting: kind) else { continue }
            precondition(body.count <= Format.payloadSize && body.startIndex == Format.innerHeaderSize, "inner block body")
        }
    }

    /// The input as it is (the checksum nearly always fails), then with its last 32 bytes
    /// replaced by the right checksum, so that the fuzzer reaches the structure behind it.
    public static func keyringFile(bytes: [UInt8]) {
        _ = try? KeyringFile.decode(bytes, checksum: SHA256.hash)
        let content = Array(bytes.dropLast(KeyringFile.checksumSize))
        guard let file = try? KeyringFile.decode(content + SHA256.hash(content), checksum: SHA256.hash) else { return }
        roundTrip(file.encode(checksum: SHA256.hash), content + SHA256.hash(content), "keyring file")
    }

    public static func keyringExport(bytes: [UInt8]) {
        guard let export = try? KeyringExport.decode(bytes) else { return }
        roundTrip(export.encode(), bytes, "keyring export")
    }

    /// The whole-index loader without cryptography: the input is a sequence of `lp32(page body)`
    /// (trailing bytes ignored), the pages of a root that owns a wide range of groups, so that
    /// the rules across records (names, folders, chunk maps, file numbers, packs) are reached.
    public static func index(bytes: [UInt8]) {
        var reader = ByteReader(bytes, context: "fuzz input")
        var bodies: [[UInt8]] = []
        while let body = try? reader.lp32(), bodies.count < 64 { bodies.append(body) }
        guard !bodies.isEmpty else { return }
        try? IndexCheck.check(root: indexFuzzRoot(pageCount: bodies.count), pageBodies: bodies)
    }

    /// The root that the `index` target's pages hang off: pages in files 8, 9, …; groups 0 … 4095.
    public static func indexFuzzRoot(pageCount: Int) -> IndexRoot {
        IndexRoot(generation: 1, vaultKey: [UInt8](repeating: 0, count: Format.keySize),
                  nextFileNumber: 4096 * UInt64(Format.groupSize), nextItemID: 1 << 40, coverCount: 2,
                  ownedGroups: [GroupRange(first: 0, count: 4096)], releasing: [],
                  pages: (0..<pageCount).map { SealedRef(fileNumber: 8 + UInt64($0), nonce: [UInt8](repeating: 0, count: Format.sealNonceSize)) })
    }

    /// The pattern parser, fed UTF-8 (invalid sequences repaired): what it accepts, it must
    /// accept again in canonical form, as the same pattern.
    public static func pattern(bytes: [UInt8]) {
        guard let pattern = try? Pattern(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        _ = pattern.hints
        let again = try? Pattern(parsing: pattern.canonical)
        precondition(again == pattern, "pattern: canonical form does not parse back")
    }

    /// The contact-code parser (docs/FORMAT.md §14.1), fed UTF-8 (invalid sequences repaired):
    /// a code it accepts prints, and parses back, as the same key.
    public static func contactCode(bytes: [UInt8]) {
        guard let code = try? ContactCode.parse(String(decoding: bytes, as: UTF8.self)) else { return }
        precondition(code.compact.utf8.count == ContactCode.length, "contact code: printed length")
        precondition((try? ContactCode.parse(code.text)) == code, "contact code: printed form does not parse back")
    }

    /// An opened grant block (§14.3, §14.4): the input is its start, the rest zeros. What the
    /// block and the role-2 record accept must encode back to the same block.
    public static func grantBlock(bytes: [UInt8]) {
        var block = Array(bytes.prefix(GrantFile.blockSize))
        block.append(contentsOf: repeatElement(0, count: GrantFile.blockSize - block.count))
        guard let body = try? GrantFile.body(ofBlock: block),
              let record = try? UnlockRecord.decode(body, role: .grant) else { return }
        precondition(record.role != .owner && record.identityKey.isEmpty, "grant block: a grant with an identity key")
        roundTrip(GrantFile.block(body: record.encode()), block, "grant block")
    }

    static func roundTrip(_ encoded: [UInt8], _ input: [UInt8], _ what: String) {
        precondition(encoded == input, "\(what): decoded bytes do not encode back to themselves")
    }
}
