import Foundation
import Glibc

/// The processes running `/usr/bin/rclone` itself whose command line names `path`: what a
/// wrapper (a shell script, whose command line starts with the shell) forked.
public func rcloneProcesses(naming path: String) -> [Int32] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
        guard let pid = Int32(entry), let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
              line.starts(with: Array("/usr/bin/rclone\0".utf8)), String(decoding: line, as: UTF8.self).contains(path) else { return nil }
        return pid
    }
}
