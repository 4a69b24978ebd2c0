import Foundation
import Glibc

/// A new empty folder `$TMPDIR/dotsafe-test-KIND.XXXXXX` of this test alone: tools/test points
/// TMPDIR at a folder per run and looks there for mounts left behind.
public enum TestFolder {
    public static func make(_ kind: String) throws -> String {
        let tmp = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(tmp)/dotsafe-test-\(kind).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed in \(tmp)") }
        return String(cString: made)
    }

    /// Removes a folder made by `make`, never descending into a mount left inside it.
    public static func remove(_ path: String) {
        _ = CommandResult.run("/bin/rm", ["-rf", "--one-file-system", path])
    }
}
