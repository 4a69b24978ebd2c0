import Foundation
import Glibc
import VaultStore

/// A wrapper `rclone` in `base/bin` whose upload (a batch copy to the remote, not into a
/// download folder) never ends and ignores SIGTERM, as does the child it forks: only SIGKILL
/// ends either. It writes its number (its process group's: dotsafe makes it the leader) and its
/// child's to files in `base`, then marks the upload started. Every other command runs the real
/// rclone.
public struct DeafRcloneWrapper {
    /// The PATH that finds it first.
    public let path: String
    private let base: String

    public init(base: String) throws {
        self.base = base
        let bin = base + "/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try """
            #!/bin/sh
            for last; do :; done
            case "$1:$last" in
                copy:*\(DownloadFolder.suffix)) ;;
                copy:*)
                    trap '' TERM
                    echo $$ > '\(base)/deaf-wrapper.new' && mv '\(base)/deaf-wrapper.new' '\(base)/deaf-wrapper'
                    /bin/sh -c 'trap "" TERM; echo $$ > "$0.new" && mv "$0.new" "$0"; exec /bin/sleep 3600' '\(base)/deaf-child' &
                    until [ -e '\(base)/deaf-child' ]; do /bin/sleep 0.1; done
                    : > '\(base)/deaf-started'
                    wait; exit 1 ;;
            esac
            exec /usr/bin/rclone "$@"

            """.write(toFile: bin + "/rclone.sh", atomically: false, encoding: .utf8)
        // Installed by another process: a descriptor of this one open for writing on the file
        // that is run, inherited by a child spawned meanwhile, makes its exec fail (ETXTBSY).
        let installed = CommandResult.run("/usr/bin/install", ["-m", "755", bin + "/rclone.sh", bin + "/rclone"])
        guard installed.succeeded else { throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "\(installed)"]) }
        path = bin + ":/usr/bin:/bin"
    }

    /// Waits (a minute at most) for an upload to begin; true once it has.
    public func waitUntilStarted() -> Bool {
        waitFor(seconds: 60) { FileManager.default.fileExists(atPath: base + "/deaf-started") }
    }

    /// The wrapper's number (its group's) and its child's, as they wrote them.
    public var processes: (wrapper: Int32, child: Int32)? {
        func read(_ name: String) -> Int32? {
            (try? String(contentsOfFile: base + "/" + name, encoding: .utf8)).flatMap { Int32($0.filter(\.isNumber)) }
        }
        guard let wrapper = read("deaf-wrapper"), let child = read("deaf-child") else { return nil }
        return (wrapper, child)
    }

    /// Those of its processes that still run (a zombie runs nothing).
    public var running: [Int32] {
        guard let (wrapper, child) = processes else { return [] }
        return Set([wrapper, child] + processGroupMembers(wrapper)).filter(isRunning).sorted()
    }

    /// Ends what is left of it, for a test that failed.
    public func kill() {
        guard let (wrapper, child) = processes else { return }
        Glibc.kill(-wrapper, SIGKILL)
        Glibc.kill(child, SIGKILL)
    }
}

/// Whether `pid` names a process that runs (not a zombie): from /proc/PID/stat, whose state
/// follows the command's name in parentheses.
public func isRunning(_ pid: Int32) -> Bool {
    guard let stat = try? readProcFile("/proc/\(pid)/stat"), let end = stat.lastIndex(of: ")") else { return false }
    return stat[stat.index(after: end)...].split(separator: " ").first.map { $0 != "Z" } ?? false
}
