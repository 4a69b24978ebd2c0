import Glibc

/// A Unix datagram socket a test listens on, as systemd does on NOTIFY_SOCKET and journald on
/// /dev/log. `name` is a path, or `@name` in the abstract namespace.
public final class DatagramListener: @unchecked Sendable {
    // One test thread uses it; the descriptor never changes.
    private let descriptor: Int32
    public let name: String

    public init(name: String) throws {
        self.name = name
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw HarnessError("socket name too long: \(name)") }
        withUnsafeMutableBytes(of: &address.sun_path) { for (i, byte) in bytes.enumerated() { $0[i] = byte } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        guard descriptor >= 0, bound == 0 else { throw HarnessError("cannot bind \(name): errno \(errno)") }
    }

    deinit { close(descriptor) }

    /// The next message, or nil after `seconds`.
    public func receive(seconds: Int = 20) -> String? {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        return count < 0 ? nil : String(decoding: buffer[..<count], as: UTF8.self)
    }
}
