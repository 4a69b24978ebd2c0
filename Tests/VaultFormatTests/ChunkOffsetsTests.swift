import Testing
import VaultFormat

/// The format's arithmetic (FORMAT.md §6, §7.1, §2.3): where bytes lie in chunks, and what each
/// seal binds.
@Suite struct ChunkOffsetsTests {
    static let P = UInt64(Format.payloadSize)

    @Test func offsetsAndCounts() {
        #expect(ChunkOffsets.chunkIndex(0) == 0 && ChunkOffsets.chunkIndex(Self.P - 1) == 0 && ChunkOffsets.chunkIndex(Self.P) == 1)
        #expect(ChunkOffsets.offsetInChunk(Self.P + 5) == 5)
        #expect(ChunkOffsets.start(ofChunk: 3) == 3 * Self.P)
        // The worked sizes of §7.3.
        #expect(ChunkOffsets.chunkCount(forSize: 0) == 0)
        #expect(ChunkOffsets.chunkCount(forSize: Self.P) == 1)
        #expect(ChunkOffsets.chunkCount(forSize: Self.P + 1) == 2)
        #expect(ChunkOffsets.chunkCount(forSize: 10_000_000) == 39)
        #expect(ChunkOffsets.chunkCount(forSize: .max) == Int(UInt64.max / Self.P) + 1, "no overflow near UInt64.max")
        #expect(ChunkOffsets.segment(ofChunk: 1023) == 0 && ChunkOffsets.segment(ofChunk: 1024) == 1)
        #expect(ChunkOffsets.chunks(inSegment: 2) == 2048..<3072)
        #expect(ChunkOffsets.maximumFileSize == Self.P << 32)
    }

    @Test func aRangeInPieces() {
        let pieces = Array(ChunkOffsets.pieces(from: Self.P - 10, to: 2 * Self.P + 20))
        #expect(pieces == [
            .init(index: 0, range: Format.payloadSize - 10..<Format.payloadSize, position: 0),
            .init(index: 1, range: 0..<Format.payloadSize, position: 10),
            .init(index: 2, range: 0..<20, position: 10 + Format.payloadSize),
        ])
        #expect(Array(ChunkOffsets.pieces(from: 5, to: 5)).isEmpty)
        #expect(Array(ChunkOffsets.pieces(from: 4096, to: 8192)) == [.init(index: 0, range: 4096..<8192, position: 0)])
    }

    @Test func sealContextsAreTheTableOfSection2_3() {
        #expect(SealContext.indexRoot(slot: 1).label == Array("DotSafe v1 index root".utf8))
        #expect(SealContext.indexRoot(slot: 1).context == [1])
        #expect(SealContext.indexPage.context.isEmpty && SealContext.indexPage.label == Array("DotSafe v1 index page".utf8))
        let chunk = SealContext.chunk(item: 0x1234_5678, index: 3)
        #expect(chunk.label == Array("DotSafe v1 chunk".utf8))
        #expect(chunk.context == [0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0], "u64 itemID || u64 chunkIndex, little-endian")
        #expect(SealContext.member(item: 2).context == [2, 0, 0, 0, 0, 0, 0, 0])
        #expect(SealContext.member(item: 2).associatedData == Array("DotSafe v1 member".utf8) + [2, 0, 0, 0, 0, 0, 0, 0])
        #expect(SealContext.keyringExport.label == Array("DotSafe v1 keyring export".utf8) && SealContext.keyringExport.context.isEmpty)
    }
}
