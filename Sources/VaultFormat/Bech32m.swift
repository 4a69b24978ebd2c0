/// The bech32m checksum (BIP 173's BCH code over GF(32) with BIP 350's final constant), which
/// contact codes use (docs/FORMAT.md §14.1). Values are 5-bit groups; the human-readable part
/// enters the checksum, so a code of another kind fails it too.
enum Bech32m {
    static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    static let checksumLength = 6
    /// BIP 350's constant; BIP 173's bech32 used 1, which let a `q` be inserted before a final `p`.
    static let constant: UInt32 = 0x2bc8_30a3
    private static let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]

    static func polymod(_ values: [UInt8]) -> UInt32 {
        var check: UInt32 = 1
        for value in values {
            let top = check >> 25
            check = (check & 0x1ff_ffff) << 5 ^ UInt32(value)
            for index in 0..<5 where (top >> UInt32(index)) & 1 == 1 { check ^= generator[index] }
        }
        return check
    }

    /// The human-readable part as the checksum sees it: high bits, a zero, low bits.
    static func expand(_ humanReadable: [UInt8]) -> [UInt8] {
        humanReadable.map { $0 >> 5 } + [0] + humanReadable.map { $0 & 31 }
    }

    /// The six check values for `data` under `humanReadable`.
    static func checksum(humanReadable: [UInt8], data: [UInt8]) -> [UInt8] {
        let remainder = polymod(expand(humanReadable) + data + [UInt8](repeating: 0, count: checksumLength)) ^ constant
        return (0..<checksumLength).map { UInt8((remainder >> UInt32(5 * (checksumLength - 1 - $0))) & 31) }
    }

    /// True when `dataAndChecksum` (5-bit values, checksum last) checks under `humanReadable`.
    static func verify(humanReadable: [UInt8], dataAndChecksum: [UInt8]) -> Bool {
        polymod(expand(humanReadable) + dataAndChecksum) == constant
    }

    /// Bytes as 5-bit groups, big-endian bit order, the last group padded with zero bits.
    static func groups(of bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8 | Int(byte)) & 0xfff
            bits += 8
            while bits >= 5 { bits -= 5; out.append(UInt8((buffer >> bits) & 31)) }
        }
        if bits > 0 { out.append(UInt8((buffer << (5 - bits)) & 31)) }
        return out
    }

    /// The inverse of `groups(of:)`; nil when the padding bits are not zero or a whole byte is left.
    static func bytes(of groups: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = [], buffer = 0, bits = 0
        for group in groups {
            buffer = (buffer << 5 | Int(group)) & 0xfff
            bits += 5
            if bits >= 8 { bits -= 8; out.append(UInt8((buffer >> bits) & 0xff)) }
        }
        guard bits < 5, buffer & ((1 << bits) - 1) == 0 else { return nil }
        return out
    }
}
