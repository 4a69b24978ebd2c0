/// What a sync's merge changed in a vault's tree, for a mount whose kernel caches what it saw:
/// items whose payload or names changed, or that went (their attributes and cached pages are
/// stale), and the names that appeared, went or moved (with their folders among the items).
public struct PulledChanges: Equatable, Sendable {
    public struct Name: Hashable, Sendable {
        public var parent: UInt64
        public var name: [UInt8]
    }

    public var items: Set<UInt64> = []
    public var names: Set<Name> = []

    public init() {}

    public var isEmpty: Bool { items.isEmpty && names.isEmpty }
}
