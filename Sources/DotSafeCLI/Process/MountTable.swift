import Foundation
import SystemCalls

/// /proc/mounts, read for mount points (paths there escape space, tab, newline and backslash
/// as octal).
enum MountTable {
    struct Entry {
        var mountPoint: String
        var type: String
        var options: String

        /// The user a FUSE mount belongs to (its `user_id=` option).
        var userID: UInt32? {
            options.split(separator: ",").first { $0.hasPrefix("user_id=") }.flatMap { UInt32($0.dropFirst(8)) }
        }
    }

    static func entries() -> [Entry] {
        let text = String(decoding: (try? SystemCall.readAll("/proc/mounts")) ?? [], as: UTF8.self)
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 4 else { return nil }
            return Entry(mountPoint: unescape(String(fields[1])), type: String(fields[2]), options: String(fields[3]))
        }
    }

    static func isMountPoint(_ path: String) -> Bool {
        let resolved = canonical(path)
        return entries().contains { $0.mountPoint == resolved }
    }

    /// The mount at `path` if it is a DotSafe one.
    static func dotsafeMount(at path: String) -> Entry? {
        let resolved = canonical(path)
        return entries().last { $0.mountPoint == resolved && $0.type == "fuse.dotsafe" }
    }

    /// `path` absolute, with symbolic links resolved: as a mount's record and /proc/mounts name it.
    /// It looks at each folder on the way, the mount point too, which waits for a stopped daemon.
    static func canonical(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// `path` absolute, `.` and `..` taken out, by its text only: it touches no file, so no
    /// mount whose daemon does not answer can hold it up.
    static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var components: [Substring] = []
        for component in full.split(separator: "/") where component != "." {
            if component == ".." { _ = components.popLast() } else { components.append(component) }
        }
        return "/" + components.joined(separator: "/")
    }

    private static func unescape(_ field: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == 0x5c, utf8.count >= 3, let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
