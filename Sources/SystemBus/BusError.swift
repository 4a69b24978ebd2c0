/// What can go wrong on a bus. Each case's text is the library's or the peer's own words, for
/// a one-line message above.
public enum BusError: Error, Equatable, CustomStringConvertible {
    /// No connection could be made, or the bus did not say hello within the deadline.
    case unreachable(String)
    /// A call got an error reply (its D-Bus error name and message), or none in time.
    case callFailed(name: String, message: String)
    /// The bus closed the connection.
    case disconnected

    public var description: String {
        switch self {
        case .unreachable(let text): text
        case .callFailed(let name, let message): message.isEmpty ? name : "\(message) (\(name))"
        case .disconnected: "the bus closed the connection"
        }
    }
}
