/// Root extension tag 4 (docs/FORMAT.md §13.5, §13.12): the pattern change of a synced vault
/// upgraded from format 1 moved its names here since the last sync; the remote still holds its
/// root slots at names from `rootLocator` and device 0's files at names from `namesKey`, until
/// the next sync moves them. It holds keys: the owner wipes them (VaultCore).
public struct FormerRemoteNames: Equatable, Sendable {
    public static let extensionTag: UInt16 = 4
    public static let size = 2 * Format.keySize

    public var rootLocator: [UInt8]
    public var namesKey: [UInt8]

    public init(rootLocator: [UInt8], namesKey: [UInt8]) {
        self.rootLocator = rootLocator
        self.namesKey = namesKey
    }

    public func encode() -> [UInt8] { rootLocator + namesKey }

    public static func decode(_ value: [UInt8]) throws -> FormerRemoteNames {
        guard value.count == size else { throw FormatError.invalid("index root: extension 4's length") }
        return FormerRemoteNames(rootLocator: Array(value[..<Format.keySize]), namesKey: Array(value[Format.keySize...]))
    }
}
