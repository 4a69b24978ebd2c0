/// The 26-character names of storage files: base32 (RFC 4648, lowercase, unpadded) of 16 bytes.
public enum FileName {
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    public static func encode(_ raw: [UInt8]) -> String {
        precondition(raw.count == Format.nameBytes, "file names are made from 16 bytes")
        var out: [UInt8] = []
        out.reserveCapacity(Format.nameLength)
        var buffer = 0, bits = 0
        for byte in raw {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[(buffer >> bits) & 31])
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// True for names of the storage's form; anything else in the folder is ignored.
    public static func isWellFormed(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == Format.nameLength else { return false }
        guard utf8.allSatisfy({ (0x61...0x7a).contains($0) || (0x32...0x37).contains($0) }) else { return false }
        // 128 bits fill 25 characters and 3 bits of the last one: its 2 low bits are zero.
        guard let last = alphabet.firstIndex(of: utf8.last!) else { return false }
        return last & 3 == 0
    }
}
