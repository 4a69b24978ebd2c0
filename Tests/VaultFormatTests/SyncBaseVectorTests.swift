import DotSafeTestSupport
import Testing
@testable import VaultCore
import VaultCrypto
import VaultFormat

/// docs/FORMAT.md §13.11: the remote's index names, the sync base's stream, header and piece,
/// written by tools/vectors/make-vectors.py (syncbase.py) from FORMAT.md alone.
@Suite struct SyncBaseVectorTests {
    static func record() throws -> VectorRecord { try #require(try VectorFile.load("sync-base.txt", in: .module).first) }

    @Test func theRemoteNamesDifferFromTheDevicesAndMatch() throws {
        let record = try Self.record()
        let unlock = try #require(try VectorFile.load("unlock-record.txt", in: .module).first)
        let locator = try SecretBytes(copying: unlock.hex("LOC")), rootLocator = try SecretBytes(copying: unlock.hex("RL"))
        #expect(try FormatTwoKeys.unlockName(locator: locator, location: Label.remoteLocation) == record.string("REMOTEUNLOCK"))
        #expect(try FormatTwoKeys.unlockName(locator: locator) != record.string("REMOTEUNLOCK"))
        for slot in 0..<2 {
            let name = try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot), location: Label.remoteLocation)
            #expect(try name == record.string("REMOTESLOT\(slot)"))
            #expect(try FormatTwoKeys.slotName(rootLocator: rootLocator, slot: UInt8(slot)) != name)
        }
    }

    /// The remote's unlock record carries the owner's identity and recipients (§13.11), so that
    /// the owner's devices share as one identity.
    @Test func theRemoteRecordByteForByte() throws {
        let record = try Self.record()
        let unlock = try #require(try VectorFile.load("unlock-record.txt", in: .module).first)
        let recipients = try record.hex("RECIPIENT0") + record.hex("RECIPIENT1")
        let stated = UnlockRecord(vaultKey: try unlock.hex("VK"), rootLocator: try unlock.hex("RL"),
                                  ownFile: try FormatTwoVectorTests.fileRef(unlock.string("FILEREF")), identityKey: try unlock.hex("IDENTITY"),
                                  optional: [.init(tag: UnlockRecord.Tag.recipients, value: recipients)])
        let body = try record.hex("RECORDBODY")
        #expect(stated.encode() == body)
        #expect(try UnlockRecord.decode(body[...]) == stated)
        let context = SealContext.unlock(location: Label.remoteLocation)
        let file = try FormatTwoVectorTests.seal(unlock.hex("IK"), kind: .unlockRecord, body: body, seedHex: record.hex("RECORDSEED"),
                                                 nonce: record.hex("RECORDN"), seal: context)
        #expect(sha256(file) == (try record.hex("RECORDSHA256")))
        #expect(throws: CryptoError.authenticationFailed) {
            try Sealer.openEnvelope(file, expectedNonce: nil, kind: .unlockRecord, version: Format.versionTwo,
                                    key: .secret(try SecretBytes(copying: unlock.hex("IK"))), seal: .unlock(location: Label.localLocation))
        }
    }

    @Test func theStreamHeaderAndPieceByteForByte() throws {
        let record = try Self.record()
        let items = try record.list("ITEMS").map { fields in
            SyncBase.Item(id: UInt64(fields[0])!, version: UInt64(fields[1])!, parent: UInt64(fields[2])!,
                          nameHash: Array(SHA256.hash(Array(fields[3].utf8)).prefix(16)), digest: try hexBytes(fields[4]))
        }
        let base = SyncBase(items: items, pinned: try record.list("PINNED").map { UInt64($0[0])! })
        let stream = try record.hex("STREAM")
        #expect(base.encode() == stream)
        #expect(try SyncBase.decode(stream) == base)
        #expect(throws: FormatError.self) { try SyncBase.decode(stream + [0]) }
        var swapped = base
        swapped.items.reverse()
        #expect(throws: FormatError.invalid("sync base: items out of order")) { try SyncBase.decode(swapped.encode()) }

        let file = try FormatTwoVectorTests.seal(record.hex("PIECEKEY"), kind: .syncBase, body: stream, seedHex: record.hex("PADDINGSEED"),
                                                 nonce: record.hex("SEALN"), seal: .syncBase(piece: 0))
        #expect(sha256(file) == (try record.hex("PIECESHA256")))
        let header = SyncBase.Header(localGeneration: 12, readGeneration: 4, publishedGeneration: 5,
                                     pieces: [(FileRef(device: 1, number: 37), try record.hex("PIECEKEY"))])
        #expect(try header.encode() == record.hex("HEADER"))
        #expect(try SyncBase.Header.decode(record.hex("HEADER")) == header)
    }
}
