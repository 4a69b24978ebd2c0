import Glibc

/// One message to a Unix datagram socket: how the mount daemon reports readiness to systemd
/// (`NOTIFY_SOCKET`) and writes to the system log (`/dev/log`), without libsystemd. A name that
/// starts with `@` is in the abstract namespace, as systemd writes it.
public enum Datagram {
    public static func send(_ message: [UInt8], to name: String) throws(SystemError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        let isAbstract = bytes.first == UInt8(ascii: "@")
        if isAbstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count > 1, bytes.count < capacity, !bytes.dropFirst().contains(0) else {
            throw SystemError("socket address \(name)", ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { target in
            for (index, byte) in bytes.enumerated() { target[index] = byte }
        }
        // An abstract name is exactly its bytes; a path ends with its NUL.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (isAbstract ? 0 : 1))
        let descriptor = try SystemCall.retrying("socket") {
            socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        defer { SystemCall.close(descriptor) }
        try SystemCall.retrying("sendto \(name)") {
            message.withUnsafeBytes { body in
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(descriptor, body.baseAddress, body.count, Int32(MSG_NOSIGNAL), $0, length)
                    }
                }
            }
        }
    }
}
