import VaultCore

/// The kind of an inode, with its `S_IFMT` bits as `stat` reports them.
public enum FileType: Sendable, Equatable, CaseIterable {
    case regular, directory, symbolicLink, fifo, characterDevice, blockDevice, socket

    /// The type bits of `st_mode` (`S_IFREG`, `S_IFDIR`, …).
    public var modeBits: UInt32 {
        switch self {
        case .regular: 0o100000
        case .directory: 0o040000
        case .symbolicLink: 0o120000
        case .fifo: 0o010000
        case .characterDevice: 0o020000
        case .blockDevice: 0o060000
        case .socket: 0o140000
        }
    }

    public static let typeMask: UInt32 = 0o170000

    /// The type that a `mode` argument (mknod, create) names; nil for an unknown one.
    public init?(mode: UInt32) {
        guard let type = Self.allCases.first(where: { $0.modeBits == mode & Self.typeMask }) else { return nil }
        self = type
    }

    init(_ type: Vault.ItemType) {
        switch type {
        case .file: self = .regular
        case .folder: self = .directory
        case .symlink: self = .symbolicLink
        case .fifo: self = .fifo
        case .characterDevice: self = .characterDevice
        case .blockDevice: self = .blockDevice
        case .socket: self = .socket
        }
    }

    var itemType: Vault.ItemType {
        switch self {
        case .regular: .file
        case .directory: .folder
        case .symbolicLink: .symlink
        case .fifo: .fifo
        case .characterDevice: .characterDevice
        case .blockDevice: .blockDevice
        case .socket: .socket
        }
    }
}
