import Glibc
import Synchronization
import VaultCrypto

/// Fills nothing: violates the RandomSource contract on purpose, so that a new arena slot shows
/// what its memory held before (which must be zeros after `free`/`wipeAll`).
struct NoFillRandom: RandomSource {
    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {}
}

/// Hands out fixed bytes in order, to drive `uniform` through its rejection branch.
final class ScriptedRandom: RandomSource {
    private let script: [UInt8]
    private let position = Mutex(0)

    init(_ script: [UInt8]) { self.script = script }

    var consumed: Int { position.withLock { $0 } }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try position.withLock { position in
            guard position + buffer.count <= script.count else { throw CryptoError.randomSourceFailed }
            for i in 0..<buffer.count { buffer[i] = script[position + i] }
            position += buffer.count
        }
    }
}

/// 8 bytes, little-endian, as `uniform` reads a draw.
func littleEndianBytes(_ value: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
}

/// The `VmFlags` of the mapping that contains `address`, from /proc/self/smaps
/// (`dd` = not dumped, `wf` = wiped on fork, `lo` = locked).
func vmFlags(containing address: UnsafeRawPointer) throws -> Set<String> {
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
func readProcFile(_ path: String) throws -> String {
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

var isRoot: Bool { getuid() == 0 }
