import Glibc

/// The `VmFlags` of the mapping that contains `address`, from /proc/self/smaps
/// (`dd` = not dumped, `wf` = wiped on fork, `lo` = locked).
public func vmFlags(containing address: UnsafeRawPointer) throws -> Set<String> {
    let target = UInt(bitPattern: address)
    let smaps = try readProcFile("/proc/self/smaps")
    var inside = false
    for line in smaps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
            let bounds = range.split(separator: "-")
            if bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) {
                inside = start <= target && target < end
                continue
            }
        }
        if inside, fields.first == "VmFlags:" {
            return Set(fields.dropFirst().map(String.init))
        }
    }
    struct NotFound: Error {}
    throw NotFound()
}

/// /proc files report size 0, so read until EOF.
public func readProcFile(_ path: String) throws -> String {
    struct ReadError: Error { let path: String }
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw ReadError(path: path) }
    defer { close(fd) }
    var data: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if got < 0 { if errno == EINTR { continue }; throw ReadError(path: path) }
        if got == 0 { break }
        data += chunk[..<got]
    }
    return String(decoding: data, as: UTF8.self)
}

public var isRoot: Bool { getuid() == 0 }
