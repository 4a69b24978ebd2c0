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

/// The live processes of process group `group` (zombies left out: they run nothing, and one
/// whose parent is gone may wait a while for its reaper).
public func processGroupMembers(_ group: Int32) -> [Int32] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
        guard let pid = Int32(entry), let stat = try? readProcFile("/proc/\(entry)/stat"),
              let end = stat.lastIndex(of: ")") else { return nil }
        // After the command's name, which may hold spaces: state, parent, group.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 2, fields[0] != "Z", Int32(fields[2]) == group else { return nil }
        return pid
    }
}
