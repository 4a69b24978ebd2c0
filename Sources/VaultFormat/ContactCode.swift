/// A vault's contact code (docs/FORMAT.md §14.1): its X25519 public key as one typable line,
/// bech32m with the prefix `dotsafe1` and a code type, so that a typo is caught (any change of
/// up to 4 characters, any insertion or deletion) and a future kind of code is recognised.
public struct ContactCode: Equatable, Sendable {
    public let publicKey: [UInt8]

    public static let keySize = 32
    public static let humanReadable = Array("dotsafe".utf8)
    public static let prefix = "dotsafe1"
    /// Code type 1: an X25519 public key.
    public static let x25519Type: UInt8 = 1
    /// Type, 52 groups of key, 6 of checksum.
    public static let dataLength = 1 + 52 + Bech32m.checksumLength
    public static let length = 8 + dataLength
    /// Characters per group in the printed form.
    static let groupLength = 5

    public init(publicKey: [UInt8]) {
        precondition(publicKey.count == Self.keySize, "a contact code holds a 32-byte X25519 public key")
        self.publicKey = publicKey
    }

    /// Why typed text is not a contact code; the description is the line users see.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case notAContactCode
        case notACharacter(position: Int, character: String)
        case wrongLength(characters: Int)
        case typo
        case newerType(UInt8)
        case invalid(String)

        public var description: String {
            switch self {
            case .notAContactCode:
                "this is not a DotSafe contact code (a contact code starts with \(prefix))"
            case .notACharacter(let position, let character):
                "contact code: '\(character)' (character \(position)) is not a character of a contact code"
                    + " (letters except b, i, o; digits except 1)"
            case .wrongLength(let characters):
                "a contact code has \(length) characters (\(prefix) and \(dataLength) more); this has \(characters)"
            case .typo:
                "the contact code has a typo (its checksum does not match): compare it with the one you were given"
            case .newerType(let type):
                "the contact code is of a newer kind (type \(type)); update DotSafe to use it"
            case .invalid(let what):
                "the contact code is not valid: \(what)"
            }
        }
    }

    /// The code without separators: `dotsafe1` and 59 characters.
    public var compact: String {
        let data = [Self.x25519Type] + Bech32m.groups(of: publicKey)
        let all = data + Bech32m.checksum(humanReadable: Self.humanReadable, data: data)
        return Self.prefix + String(decoding: all.map { Bech32m.alphabet[Int($0)] }, as: UTF8.self)
    }

    /// The printed form: `dotsafe1`, then the 59 characters in groups of 5 joined by `-`.
    public var text: String {
        let data = Array(compact.utf8.dropFirst(Self.prefix.utf8.count))
        let groups = stride(from: 0, to: data.count, by: Self.groupLength).map {
            String(decoding: data[$0 ..< min($0 + Self.groupLength, data.count)], as: UTF8.self)
        }
        return ([Self.prefix] + groups).joined(separator: "-")
    }

    /// Reads a typed code: upper or lower case, with any dashes and white space.
    public static func parse(_ typed: String) throws(Failure) -> ContactCode {
        var characters: [UInt8] = []
        for scalar in typed.unicodeScalars where !(scalar == "-" || scalar.properties.isWhitespace) {
            guard scalar.isASCII else {
                throw .notACharacter(position: characters.count + 1, character: String(scalar))
            }
            characters.append(UInt8(ascii: scalar) | (scalar.properties.isUppercase ? 0x20 : 0))
        }
        let prefixBytes = Array(prefix.utf8)
        guard characters.starts(with: prefixBytes) else { throw .notAContactCode }
        var values: [UInt8] = []
        for (offset, character) in characters.dropFirst(prefixBytes.count).enumerated() {
            guard let value = Bech32m.alphabet.firstIndex(of: character) else {
                throw .notACharacter(position: prefixBytes.count + offset + 1, character: String(UnicodeScalar(character)))
            }
            values.append(UInt8(value))
        }
        guard values.count == dataLength else { throw .wrongLength(characters: characters.count) }
        guard Bech32m.verify(humanReadable: humanReadable, dataAndChecksum: values) else { throw .typo }
        guard values[0] == x25519Type else {
            throw values[0] > x25519Type ? .newerType(values[0]) : .invalid("code type \(values[0])")
        }
        guard let key = Bech32m.bytes(of: Array(values[1 ..< dataLength - Bech32m.checksumLength])), key.count == keySize else {
            throw .invalid("its last character carries bits that must be zero")
        }
        return ContactCode(publicKey: key)
    }
}
