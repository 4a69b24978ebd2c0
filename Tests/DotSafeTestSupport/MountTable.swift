import Foundation

/// The kernel's list of mounts, /proc/mounts, which writes a space in a path as `\040`.
public enum MountTable {
    /// The line of the mount at `path`, if there is one.
    public static func line(_ path: String) -> String? {
        // Not String(contentsOfFile:): Foundation reads one page of a /proc file (size 0) and stops.
        guard let mounts = try? readProcFile("/proc/mounts") else { return nil }
        return mounts.split(separator: "\n").map(String.init).first { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && unescape(String(fields[1])) == path
        }
    }

    public static func contains(_ path: String) -> Bool { line(path) != nil }

    private static func unescape(_ field: String) -> String {
        var result = ""
        let characters = Array(field)
        var index = 0
        while index < characters.count {
            if characters[index] == "\\", index + 3 < characters.count,
               let code = UInt8(String(characters[index + 1...index + 3]), radix: 8) {
                result.append(Character(UnicodeScalar(code)))
                index += 4
            } else {
                result.append(characters[index])
                index += 1
            }
        }
        return result
    }
}
