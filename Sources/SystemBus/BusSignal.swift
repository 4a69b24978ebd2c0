/// A signal received on a bus. `sender` is the unique name (":1.42") of the connection that sent
/// it, set by the bus itself: it cannot be forged, but anyone on the bus can send a signal with
/// any path, interface and member, so a receiver must check the sender before believing it.
public struct BusSignal: Equatable, Sendable {
    public var sender: String?
    public var path: String?
    public var interface: String?
    public var member: String?
    public var arguments: [BusValue]

    public init(sender: String?, path: String?, interface: String?, member: String?, arguments: [BusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}
