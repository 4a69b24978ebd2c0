import DotSafeTestSupport
import Glibc

/// An open file of the mount, closed when it goes.
final class Descriptor: Sendable {
    let fd: Int32

    init(_ path: String, _ flags: Int32) throws {
        fd = open(path, flags)
        guard fd >= 0 else { throw HarnessError("open \(path): errno \(errno)") }
    }

    deinit { close(fd) }

    func read(at offset: Int, _ count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = pread(fd, &buffer, count, off_t(offset))
        guard n >= 0 else { throw HarnessError("pread: errno \(errno)") }
        return Array(buffer[..<n])
    }

    func write(_ bytes: [UInt8], at offset: Int) throws {
        guard pwrite(fd, bytes, bytes.count, off_t(offset)) == bytes.count else { throw HarnessError("pwrite: errno \(errno)") }
    }

    func size() throws -> Int {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw HarnessError("fstat: errno \(errno)") }
        return Int(status.st_size)
    }
}
