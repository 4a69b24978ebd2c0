/// Why bytes from disk were refused. Decoders never trap on hostile input; they throw one of these.
public enum FormatError: Error, Equatable, Sendable {
    /// The bytes end before the structure does, or have bytes left over.
    case truncated(String)
    /// A field holds a value the format forbids; the text names the field.
    case invalid(String)
    /// Written by a newer DotSafe than this one.
    case newerVersion(found: UInt8)
}

extension FormatError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .truncated(let what): "truncated \(what)"
        case .invalid(let what): "invalid \(what)"
        case .newerVersion(let found): "made by a newer DotSafe (format version \(found)); update DotSafe to open it"
        }
    }
}
