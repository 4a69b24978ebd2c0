/// A path that rclone reaches, as the user wrote it: `name:path` from an rclone config, an
/// on-the-fly remote (`:webdav,url='http://host':path`), or a local folder.
public struct RemoteLocation: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A section of an rclone config file (possibly with `,option=value` overrides).
        case named(String)
        /// A backend with its options in the string itself, no config file needed.
        case onTheFly(backend: String)
        case localFolder
    }

    /// The string handed to rclone.
    public let path: String
    public let kind: Kind

    /// Refuses only what rclone could never read: an empty string, a line break or a NUL.
    /// Everything else is rclone's to parse (its refusal becomes `RemoteError.unparseable`).
    public init(_ path: String) throws(RemoteError) {
        guard !path.isEmpty, !path.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\0" }) else {
            throw .unparseable(remote: path.isEmpty ? "\"\"" : "(a name with a line break)", detail: "not a remote or folder name")
        }
        self.path = path
        // rclone's rule: a colon makes a remote unless a slash comes before it.
        if let colon = path.firstIndex(of: ":"), !path[..<colon].contains("/") {
            let prefix = path[..<colon]
            if prefix.isEmpty {
                let rest = path.dropFirst()
                kind = .onTheFly(backend: String(rest.prefix { $0 != "," && $0 != ":" }))
            } else {
                kind = .named(String(prefix.prefix { $0 != "," }))
            }
        } else {
            kind = .localFolder
        }
    }

    /// The path of one file directly inside this location.
    public func file(_ name: String) -> String {
        path.hasSuffix(":") || path.hasSuffix("/") ? path + name : path + "/" + name
    }

    /// How messages name the remote: an on-the-fly remote's options (URLs, users, obscured
    /// passwords) and a named remote's overrides are left out, since they may hold secrets.
    public var description: String {
        switch kind {
        case .localFolder: return path
        case .named(let name): return name + ":" + afterParameters
        case .onTheFly(let backend): return ":" + backend + ":" + afterParameters
        }
    }

    /// The path after the remote's name and options: the colon that ends them is the first one
    /// outside quotes.
    private var afterParameters: String {
        var quote: Character?
        var index = kind == .localFolder ? path.startIndex : path.index(after: path.startIndex)
        while index < path.endIndex {
            let character = path[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == ":" {
                return String(path[path.index(after: index)...])
            }
            index = path.index(after: index)
        }
        return ""
    }
}
