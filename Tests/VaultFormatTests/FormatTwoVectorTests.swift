import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §13.10: the format-2 key chain, unlock record, roots (original and copy),
/// pages and seals, written by tools/vectors/make-vectors.py (vectors2.py) from FORMAT.md alone.
@Suite struct FormatTwoVectorTests {
    static let roots = (try? VectorFile.load("index-root-v2.txt", in: .module)) ?? []
    static let pages = (try? VectorFile.load("index-page-v2.txt", in: .module)) ?? []

    static func fileRef(_ text: String) throws -> FileRef {
        let parts = text.split(separator: ".")
        guard parts.count == 2, let device = UInt16(parts[0]), let number = UInt64(parts[1]) else { throw HarnessError("FileRef \(text)") }
        return FileRef(device: device, number: number)
    }

    static func pageRefs(_ list: [[String]]) throws -> [PageRef] {
        try list.map { PageRef(firstKey: RecordKey(itemID: UInt64($0[0])!, sub: UInt32($0[1])!), file: try fileRef($0[2]), pageKey: try hexBytes($0[3])) }
    }

    static func root(_ record: VectorRecord) throws -> IndexRootV2 {
        let devices = try (0..<record.int("DEVICES")).map { k in
            DeviceEntry(deviceID: try record.hex("DEVICE\(k)ID"), namesKey: try record.hex("DEVICE\(k)NK"),
                        itemPrefix: UInt32(try record.uint64("DEVICE\(k)PREFIX")), nextItemCounter: UInt32(try record.uint64("DEVICE\(k)COUNTER")),
                        nextFileNumber: try record.uint64("DEVICE\(k)NEXTFILE"), coverCount: UInt8(try record.int("DEVICE\(k)COVERS")),
                        ownedGroups: try record.list("DEVICE\(k)GROUPS", separator: "+").map { GroupRange(first: UInt64($0[0])!, count: UInt64($0[1])!) },
                        releasing: try record.list("DEVICE\(k)RELEASING").map { UInt64($0[0])! },
                        name: Array(try record.string("DEVICE\(k)NAME").utf8))
        }
        let specials = try record.list("SPECIAL").map {
            IndexRootV2.SpecialFile(file: try fileRef($0[0]), role: IndexRootV2.SpecialFile.Role(rawValue: UInt8($0[1])!)!, name: try hexBytes($0[2]))
        }
        return IndexRootV2(generation: try record.uint64("GENERATION"), writerDevice: UInt16(try record.int("WRITER")), devices: devices,
                           specialFiles: specials, topLevel: UInt8(try record.int("LEVEL")), top: try pageRefs(record.list("TOP")),
                           extensions: try record.list("EXTENSIONS").map { IndexRootV2.Extension(tag: UInt16($0[0])!, value: try hexBytes($0[1])) })
    }

    /// A page's records (KEYn, VALUEn) or refs (TOP), as index-page-v2.txt and -v3.txt give them.
    static func node(_ record: VectorRecord) throws -> IndexPageV2.Node {
        guard try record.int("LEVEL") == 0 else { return .interior(try pageRefs(record.list("TOP"))) }
        return .leaf(try (0..<record.int("RECORDS")).map { n in
            let key = try record.string("KEY\(n)").split(separator: ".")
            return (RecordKey(itemID: UInt64(key[0])!, sub: UInt32(key[1])!), try record.hex("VALUE\(n)"))
        })
    }

    static func seal(_ key: [UInt8], kind: InnerBlock.Kind, body: [UInt8], seedHex: [UInt8], nonce: [UInt8], seal: SealContext) throws -> [UInt8] {
        let padding = try DeterministicRandom(seed: seedHex).bytes(Format.payloadSize - body.count)
        let random = FixedRandom([padding, nonce])
        let (sealedNonce, file) = try Sealer.sealEnvelope(kind: kind, version: Format.versionTwo, body: body[...],
                                                          key: .secret(try SecretBytes(copying: key)), seal: seal, random: random)
        #expect(random.isExhausted && sealedNonce == nonce)
        return file
    }

    @Test func theFilesHaveTheirRecords() {
        #expect(Self.roots.count == 5)
        #expect(Self.pages.count == 2)
    }

    /// Pattern → LOC, IK → the unlock record's name and seal → VK, RL → RK and the slot names.
    @Test func theKeyChainFromThePatternToTheRoot() throws {
        let record = try #require(try VectorFile.load("unlock-record.txt", in: .module).first)
        let keys = try #require(try VectorFile.load("keys.txt", in: .module).first)
        #expect(try record.hex("LOC") == keys.hex("LOC") && record.hex("IK") == keys.hex("IK"))
        let locator = try SecretBytes(copying: record.hex("LOC"))
        #expect(try FormatTwoKeys.unlockName(locator: locator) == record.string("UNLOCKNAME"))

        let stated = UnlockRecord(vaultKey: try record.hex("VK"), rootLocator: try record.hex("RL"), ownFile: try Self.fileRef(record.string("FILEREF")),
                                  identityKey: try record.hex("IDENTITY"), optional: [.init(tag: 1024, value: try record.hex("OPTIONAL"))])
        let body = try record.hex("BODY")
        #expect(stated.encode() == body)
        #expect(try UnlockRecord.decode(body[...]) == stated)

        let context = SealContext.unlock(location: Label.localLocation)
        let file = try Self.seal(record.hex("IK"), kind: .unlockRecord, body: body, seedHex: record.hex("PADDINGSEED"),
                                 nonce: record.hex("SEALN"), seal: context)
        #expect(sha256(file) == (try record.hex("FILESHA256")))
        let ik = try SecretBytes(copying: record.hex("IK"))
        #expect(try Sealer.openEnvelope(file, expectedNonce: nil, kind: .unlockRecord, version: Format.versionTwo, key: .secret(ik), seal: context) == body)
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(file, expectedNonce: nil, kind: .unlockRecord, version: Format.versionTwo, key: .secret(ik),
                                    seal: .unlock(location: Array("remote".utf8)))
        }

        let rootKey = try FormatTwoKeys.rootKey(vaultKey: SecretBytes(copying: stated.vaultKey))
        #expect(rootKey.copyBytes() == (try record.hex("RK")))
        let rootLocator = try SecretBytes(copying: stated.rootLocator)
        #expect(try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: 0) == record.string("SLOTNAME0"))
        #expect(try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: 1) == record.string("SLOTNAME1"))
    }

    @Test(arguments: roots)
    func rootBodyAndBothSlotsByteForByte(record: VectorRecord) throws {
        let stated = try Self.root(record)
        let body = try record.hex("BODY")
        #expect(stated.encode() == body)
        #expect(try IndexRootV2.decode(body[...]) == stated)
        if let move = try stated.namesMove() {
            // Extension tag 3's fields (§13.5), as the vector gives them apart.
            #expect(try move == NamesMove(formerRootLocator: record.hex("MOVEFORMERRL"), rootLocator: record.hex("MOVERL"),
                                          namesKey: record.hex("MOVENK"), slotFiles: record.list("MOVESLOTFILES").map { try Self.fileRef($0[0]) }))
            #expect(move.encode() == stated.extensions.first { $0.tag == NamesMove.extensionTag }?.value)
        }
        if let former = try stated.formerRemoteNames() {
            // Extension tag 4's fields (§13.5): a synced vault's move, beside tag 2.
            #expect(try former == FormerRemoteNames(rootLocator: record.hex("FORMERREMOTERL"), namesKey: record.hex("FORMERREMOTENK")))
            #expect(former.encode() == stated.extensions.first { $0.tag == FormerRemoteNames.extensionTag }?.value)
            #expect(stated.devices.count == 2 && stated.extensions.contains { $0.tag == IndexRootV2.formerRemoteUnlockTag })
        }
        if let value = stated.extensions.first(where: { $0.tag == StagedDownloads.extensionTag })?.value {
            // Extension tag 1025's entries (§13.5), as the vector gives them apart.
            let entries = try record.list("STAGED").map {
                StagedDownloads.Entry(target: try Self.fileRef($0[0]), staged: try Self.fileRef($0[1]), digest: try hexBytes($0[2]))
            }
            #expect(entries.count == 2 && StagedDownloads.decode(value) == StagedDownloads(entries: entries))
            #expect(StagedDownloads(entries: entries).encode() == value)
        }
        let slot = UInt64(try record.int("SLOT"))
        #expect(slot == stated.generation % 2, "the original lies in slot generation mod 2")
        let original = try Self.seal(record.hex("RK"), kind: .indexRoot, body: body, seedHex: record.hex("PADDINGSEED"),
                                     nonce: record.hex("SEALN"), seal: .indexRootV2(slot: slot))
        #expect(sha256(original) == (try record.hex("SLOTSHA256")))
        let copy = try Self.seal(record.hex("RK"), kind: .indexRoot, body: body, seedHex: record.hex("PADDINGSEED"),
                                 nonce: record.hex("COPYN"), seal: .indexRootV2(slot: 1 - slot))
        #expect(sha256(copy) == (try record.hex("COPYSHA256")))
        // A root opens only in the slot it was sealed for, and not as format 1.
        let rk = try SecretBytes(copying: record.hex("RK"))
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(original, expectedNonce: nil, kind: .indexRoot, version: Format.versionTwo, key: .secret(rk),
                                    seal: .indexRootV2(slot: 1 - slot))
        }
        #expect(throws: FormatError.invalid("inner block version 2")) {
            try Sealer.openEnvelope(original, expectedNonce: nil, kind: .indexRoot, key: .secret(rk), seal: .indexRootV2(slot: slot))
        }
    }

    @Test(arguments: pages)
    func pageBodyAndFileByteForByte(record: VectorRecord) throws {
        let level = UInt8(try record.int("LEVEL")), body = try record.hex("BODY")
        let node = try Self.node(record)
        #expect(IndexPageV2.encode(level: level, node) == body)
        switch (try IndexPageV2.decode(body[...], level: level), node) {
        case (.leaf(let read), .leaf(let stated)):
            #expect(read.map(\.key) == stated.map(\.key) && read.map(\.value) == stated.map(\.value))
            for (key, value) in read {
                if key.segmentIndex == nil { #expect(try ItemRecord.decode(value).recordVersion == 2) } else { _ = try ChunkSegmentV2.decode(value) }
            }
        case (.interior(let read), .interior(let stated)): #expect(read == stated)
        default: Issue.record("page decoded at another level")
        }
        #expect(throws: FormatError.invalid("index page level \(level), expected \(level + 1)")) { try IndexPageV2.decode(body[...], level: level + 1) }
        let file = try Self.seal(record.hex("PAGEKEY"), kind: .indexPage, body: body, seedHex: record.hex("PADDINGSEED"),
                                 nonce: record.hex("SEALN"), seal: .indexPageV2(level: level))
        #expect(sha256(file) == (try record.hex("FILESHA256")))
    }

    @Test func chunkAndMemberSealsByteForByte() throws {
        let record = try #require(try VectorFile.load("seal-v2.txt", in: .module).first)
        let index = try record.int("CHUNKINDEX"), body = try record.hex("BODY")
        let file = try Self.seal(record.hex("CHUNKKEY"), kind: .chunk, body: body, seedHex: record.hex("PADDINGSEED"),
                                 nonce: record.hex("SEALN"), seal: .chunkV2(index: index))
        #expect(sha256(file) == (try record.hex("FILESHA256")))
        let head = try record.hex("HEAD"), tail = try record.hex("TAIL")
        #expect(Array(file.prefix(64)) == head && Array(file.suffix(64)) == tail)
        let chunkKey = try SecretBytes(copying: record.hex("CHUNKKEY"))
        #expect(try Sealer.openEnvelope(file, expectedNonce: nil, kind: .chunk, version: Format.versionTwo, key: .secret(chunkKey),
                                        seal: .chunkV2(index: index)) == body)
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(file, expectedNonce: nil, kind: .chunk, version: Format.versionTwo, key: .secret(chunkKey),
                                    seal: .chunkV2(index: index + 1))
        }

        let memberKey = try SecretBytes(copying: record.hex("MEMBERKEY")), nonce = try record.hex("MEMBERN")
        let random = FixedRandom([nonce])
        let sealed = try Sealer.seal(record.hex("CONTENT")[...], key: .secret(memberKey), seal: .memberV2, random: random)
        #expect(sealed.nonce + sealed.sealed == (try record.hex("MEMBER")))
        let member = try record.hex("MEMBER")
        #expect(try Sealer.open(member[Format.sealNonceSize...], nonce: Array(member.prefix(Format.sealNonceSize)), key: .secret(memberKey),
                                seal: .memberV2) == record.hex("CONTENT"))
    }
}
