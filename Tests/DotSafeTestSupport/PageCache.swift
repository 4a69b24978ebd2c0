import Foundation
import Glibc

/// How many of the first `bytes` of a file the kernel's page cache holds, in pages (mincore of
/// a mapping, which faults nothing in); with `dropFirst`, after asking the kernel to drop them.
public func residentPages(_ path: String, bytes: Int, dropFirst: Bool = false) throws -> Int {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw HarnessError("open \(path): errno \(errno)") }
    defer { close(fd) }
    if dropFirst { _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED)) }
    guard let map = mmap(nil, bytes, PROT_READ, MAP_SHARED, fd, 0), map != MAP_FAILED else { throw HarnessError("mmap: errno \(errno)") }
    defer { munmap(map, bytes) }
    var resident = [UInt8](repeating: 0, count: (bytes + 4095) / 4096)
    guard mincore(map, bytes, &resident) == 0 else { throw HarnessError("mincore: errno \(errno)") }
    return resident.filter { $0 & 1 != 0 }.count
}

/// How many unnamed files (O_TMPFILE) in `folder` this process (or `pid`'s) holds open:
/// /proc/PID/fd shows each as "FOLDER/#INODE (deleted)".
public func unnamedFilesOpen(in folder: String, pid: Int32? = nil) throws -> Int {
    let fds = "/proc/" + (pid.map(String.init) ?? "self") + "/fd/"
    return try FileManager.default.contentsOfDirectory(atPath: fds).filter { fd in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: fds + fd))?.hasPrefix(folder + "/#") == true
    }.count
}
