/// The paper backup of the pattern salt (docs/FORMAT.md §8.3): 17 groups of 5 characters that a
/// person writes down and types back. Each group is 4 characters of base32 (§1) and a check
/// character bound to the group's number, so a typo is reported with the group it is in; a
/// check over the whole code catches what a group check misses (1 typo in 32) and groups typed
/// in the wrong order. The hash is passed in: this module does no cryptography.
public struct RecoveryCode: Equatable, Sendable {
    public enum KDF: Equatable, Sendable {
        case pbkdf2(rounds: UInt32)
        case scrypt(log2N: UInt8, r: UInt8, p: UInt8)
    }

    public var kdf: KDF
    public var salt: [UInt8]

    public static let saltSize = 32
    public static let groupCount = 17
    public static let dataPerGroup = 4
    public static let groupLength = dataPerGroup + 1
    /// version, kdf, 4 bytes of parameters, the salt, 4 bytes of whole-code check.
    static let byteCount = 1 + 1 + 4 + saltSize + 4
    static let codeLabel = Array("DotSafe v1 recovery code".utf8)
    static let groupLabel = Array("DotSafe v1 recovery group".utf8)
    static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    public init(kdf: KDF, salt: [UInt8]) {
        precondition(salt.count == Self.saltSize, "a recovery code holds a 32-byte salt")
        self.kdf = kdf; self.salt = salt
    }

    /// Why typed text is not a recovery code; the description is the line users see.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case notACharacter(group: Int, character: String)
        case wrongLength(characters: Int)
        case typo(groups: [Int])
        case wholeCode
        case newerVersion(UInt8)
        case invalid(String)

        public var description: String {
            switch self {
            case .notACharacter(let group, let character):
                "group \(group): '\(character)' is not a character of a recovery code (letters a-z and digits 2-7)"
            case .wrongLength(let characters):
                "a recovery code has \(groupCount) groups of \(groupLength) characters (\(groupCount * groupLength)); this has \(characters)"
            case .typo(let groups) where groups.count == 1:
                "group \(groups[0]) has a typo (its check character does not match): compare it with your paper"
            case .typo(let groups):
                "groups \(groups.map(String.init).joined(separator: ", ")) have typos (their check characters do not match): compare them with your paper"
            case .wholeCode:
                "every group checks out but the code as a whole does not: are the groups in the right order?"
            case .newerVersion(let version):
                "the recovery code was made by a newer DotSafe (version \(version)); update DotSafe to read it"
            case .invalid(let what): "the recovery code is not valid: \(what)"
            }
        }
    }

    /// The groups, in order.
    public func encode(hash: ([UInt8]) -> [UInt8]) -> [String] {
        var body: [UInt8] = [Format.version]
        switch kdf {
        case .pbkdf2(let rounds):
            body.append(1)
            withUnsafeBytes(of: rounds.littleEndian) { body.append(contentsOf: $0) }
        case .scrypt(let log2N, let r, let p):
            body += [2, log2N, r, p, 0]
        }
        body += salt
        body += hash(Self.codeLabel + body).prefix(4)
        let characters = Self.base32(body)
        return (0..<Self.groupCount).map { index in
            let data = Array(characters[index * Self.dataPerGroup ..< (index + 1) * Self.dataPerGroup])
            return String(decoding: data + [Self.check(group: index + 1, data, hash: hash)], as: UTF8.self)
        }
    }

    /// Reads typed text: upper or lower case, with any spaces, dashes and line breaks.
    public static func decode(_ text: String, hash: ([UInt8]) -> [UInt8]) throws(Failure) -> RecoveryCode {
        var characters: [UInt8] = []
        for scalar in text.unicodeScalars where !(scalar == "-" || scalar.properties.isWhitespace) {
            let lower = scalar.properties.lowercaseMapping.unicodeScalars.first ?? scalar
            guard lower.isASCII, alphabet.contains(UInt8(lower.value)) else {
                throw .notACharacter(group: characters.count / groupLength + 1, character: String(scalar))
            }
            characters.append(UInt8(lower.value))
        }
        guard characters.count == groupCount * groupLength else { throw .wrongLength(characters: characters.count) }
        var data: [UInt8] = []
        var typos: [Int] = []
        for index in 0..<groupCount {
            let group = Array(characters[index * groupLength ..< (index + 1) * groupLength])
            let groupData = Array(group.prefix(dataPerGroup))
            if check(group: index + 1, groupData, hash: hash) != group[dataPerGroup] { typos.append(index + 1) }
            data += groupData
        }
        guard typos.isEmpty else { throw .typo(groups: typos) }
        guard let bytes = unbase32(data, count: byteCount) else { throw .wholeCode }
        let body = Array(bytes.prefix(byteCount - 4))
        guard Array(hash(codeLabel + body).prefix(4)) == Array(bytes.suffix(4)) else { throw .wholeCode }
        if body[0] > Format.version { throw .newerVersion(body[0]) }
        guard body[0] == Format.version else { throw .invalid("version \(body[0])") }
        let salt = Array(body[6..<(6 + saltSize)])
        switch body[1] {
        case 1:
            let rounds = UInt32(body[2]) | UInt32(body[3]) << 8 | UInt32(body[4]) << 16 | UInt32(body[5]) << 24
            return RecoveryCode(kdf: .pbkdf2(rounds: rounds), salt: salt)
        case 2:
            guard body[5] == 0 else { throw .invalid("reserved byte") }
            return RecoveryCode(kdf: .scrypt(log2N: body[2], r: body[3], p: body[4]), salt: salt)
        default:
            throw .invalid("unknown key derivation \(body[1])")
        }
    }

    /// The check character of group `number` (from 1): the top 5 bits of
    /// SHA-256("DotSafe v1 recovery group" || u8 number || its 4 characters).
    static func check(group number: Int, _ data: [UInt8], hash: ([UInt8]) -> [UInt8]) -> UInt8 {
        alphabet[Int(hash(groupLabel + [UInt8(number)] + data)[0] >> 3)]
    }

    /// RFC 4648 base32, lowercase, no padding: 42 bytes give 68 characters (the last 4 bits 0).
    static func base32(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8 | Int(byte)) & 0xffff
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[(buffer >> bits) & 31])
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return out
    }

    /// The inverse; nil when the padding bits are not zero.
    static func unbase32(_ characters: [UInt8], count: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = 0, bits = 0
        for character in characters {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = (buffer << 5 | value) & 0xffff
            bits += 5
            if bits >= 8 {
                bits -= 8
                if out.count < count { out.append(UInt8((buffer >> bits) & 0xff)) }
            }
        }
        return buffer & ((1 << bits) - 1) == 0 && out.count == count ? out : nil
    }
}
