import Testing
import VaultFormat

/// Root extension tag 1025, staged downloads (docs/FORMAT.md §13.5): bytes as written, and the
/// values a reader ignores.
@Suite struct StagedDownloadsFormatTests {
    static let entry = StagedDownloads.Entry(target: FileRef(device: 1, number: 37), staged: FileRef(device: 0, number: 21),
                                             digest: (0xA0...0xAF).map { UInt8($0) })
    /// u64 target, u64 staged (little-endian FileRefs: the device in the top 16 bits), digest.
    static let bytes = "2500000000000100" + "1500000000000000" + "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    @Test func anEntryIsThirtyTwoBytes() {
        let value = StagedDownloads(entries: [Self.entry]).encode()
        #expect(Self.hex(value) == Self.bytes)
        #expect(StagedDownloads.decode(value) == StagedDownloads(entries: [Self.entry]))
        let two = StagedDownloads(entries: [Self.entry, Self.entry]).encode()
        #expect(StagedDownloads.decode(two)?.entries.count == 2)
    }

    @Test func aValueOfAnotherLengthIsIgnored() {
        let value = StagedDownloads(entries: [Self.entry]).encode()
        #expect(StagedDownloads.decode([]) == nil, "no entry")
        #expect(StagedDownloads.decode(Array(value.dropLast())) == nil, "31 bytes")
        #expect(StagedDownloads.decode(value + [0]) == nil, "33 bytes")
    }
}
