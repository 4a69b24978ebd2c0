import Synchronization
import VaultCore
import VaultFormat

/// A keyring kept in memory, so the keyring's rules are tested apart from the file; it counts
/// its saves.
public final class MemoryKeyringBackend: KeyringBackend {
    private let state: Mutex<(items: [KeyringFile.Item]?, saves: Int)>

    public init(_ items: [KeyringFile.Item]? = nil) { state = Mutex((items, 0)) }

    public var items: [KeyringFile.Item]? {
        get { state.withLock { $0.items } }
        set { state.withLock { $0.items = newValue } }
    }
    public var saves: Int { state.withLock { $0.saves } }
    public var location: String { "memory" }
    public func load() throws -> [KeyringFile.Item]? { items }
    public func save(_ items: [KeyringFile.Item]) throws { state.withLock { $0 = (items, $0.saves + 1) } }
    public func remove() throws { state.withLock { $0.items = nil } }
}
