/// A value in a D-Bus message, as far as DotSafe reads or writes them (the signatures of
/// logind's calls and signals). Anything else read from a message is `.other` with its type code.
public enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    case uint32(UInt32)
    /// A descriptor the message carried: a new one of this process, for the receiver to close.
    case fileDescriptor(Int32)
    indirect case variant(BusValue)
    case structure([BusValue])
    case other(type: Int32)

    /// The text of a string or an object path.
    public var text: String? {
        switch self {
        case .string(let text), .objectPath(let text): text
        default: nil
        }
    }
}
