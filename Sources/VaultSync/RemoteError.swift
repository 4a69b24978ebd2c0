import Foundation
import SystemCalls

/// Failures of a remote, each one line for `dotsafe: <line>`. A remote's options never appear in
/// a message (`RemoteLocation.description` leaves them out), and neither does anything rclone
/// printed beyond its last error.
public enum RemoteError: Error, Equatable, Sendable {
    /// No `rclone` program on PATH.
    case rcloneMissing
    /// rclone cannot make sense of the remote: unknown config section or backend, bad syntax.
    case unparseable(remote: String, detail: String)
    /// The remote did not answer: connection refused or reset, no such host, a timeout.
    case unreachable(remote: String, detail: String)
    /// The remote answered but would not store or remove files (read-only, no permission).
    case writeRefused(remote: String, detail: String)
    /// The remote has no room for the files.
    case noSpace(remote: String)
    /// Files asked for are not on the remote (or not of the storage size there).
    case missingFiles(remote: String, names: [String])
    /// A local file to upload is not a regular file of the storage size.
    case unusableLocalFile(String)
    /// Any other failure of rclone, with its exit status and last error.
    case failed(remote: String, status: Int32, detail: String)
    /// A stop was asked for (`StopSignals`: Ctrl-C, SIGTERM, SIGHUP): no rclone command starts,
    /// and the one running was ended. The caller says what the next sync does.
    case interrupted(signal: Int32)
}

extension RemoteError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .rcloneMissing:
            "rclone is not installed (no rclone program on PATH): sync needs it (apt-get install rclone)"
        case .unparseable(let remote, let detail): "rclone cannot use the remote \(remote): \(detail)"
        case .unreachable(let remote, let detail): "the remote \(remote) cannot be reached: \(detail)"
        case .writeRefused(let remote, let detail): "the remote \(remote) refused to store or remove files: \(detail)"
        case .noSpace(let remote): "the remote \(remote) is out of space"
        case .missingFiles(let remote, let names):
            "the remote \(remote) lacks \(names.count) storage file\(names.count == 1 ? "" : "s") (\(names.first ?? ""))"
        case .unusableLocalFile(let path): "\(path) is not a regular file of the storage size"
        case .failed(let remote, let status, let detail): "rclone failed on the remote \(remote) (exit \(status)): \(detail)"
        case .interrupted(let signal): "interrupted by \(StopSignals.name(signal))"
        }
    }
}

extension RemoteError {
    /// rclone's hash check found the file other than what it wrote or read: something else
    /// wrote it meanwhile (or the transfer really was corrupted).
    var changedInTransfer: Bool {
        if case .failed(_, _, let detail) = self { detail.contains("corrupted on transfer") } else { false }
    }

    /// What an operation that rclone ended with a non-zero status means, from its last error
    /// line. Network trouble is checked first: a write that cannot connect is unreachable, not
    /// refused. A client error (4xx) or "permission denied" while writing is a refusal; rclone's
    /// own WebDAV server answers 404 to writes when read-only and 405 when its disk is full.
    static func classify(status: Int32, errorOutput: [UInt8], remote: RemoteLocation, writing: Bool) -> RemoteError {
        let detail = lastError(errorOutput, hiding: remote.path)
        let text = String(decoding: errorOutput, as: UTF8.self).lowercased()
        let name = remote.description
        func mentions(_ words: [String]) -> Bool { words.contains { text.contains($0) } }
        if mentions(["no space left", "insufficient storage", "507 ", "quota", "disk space", "disk full"]) {
            return .noSpace(remote: name)
        }
        if mentions(["connection refused", "connection reset", "no such host", "i/o timeout", "timeout",
                     "network is unreachable", "no route to host", "broken pipe", "unexpected eof", ": eof",
                     "couldn't connect", "connection lost", "tls handshake", "server misbehaving"]) {
            return .unreachable(remote: name, detail: detail)
        }
        if mentions(["didn't find section in config", "didn't find backend", "unterminated quoted",
                     "config value", "parse", "invalid", "is not supported", "unknown backend"])
            && text.contains("failed to create file system") {
            return .unparseable(remote: name, detail: detail)
        }
        if mentions(["permission denied", "read only", "read-only", "forbidden", "accessdenied", "access denied",
                     "not allowed", "unauthorized", "401 ", "403 "])
            || (writing && mentions(["404 ", "405 ", "409 "])) {
            return .writeRefused(remote: name, detail: detail)
        }
        return .failed(remote: name, status: status, detail: detail)
    }

    /// The last thing rclone said went wrong, without its time stamp, level, "last error was"
    /// preamble or the remote's full string (which may hold options).
    static func lastError(_ errorOutput: [UInt8], hiding secret: String) -> String {
        let lines = String(decoding: errorOutput, as: UTF8.self).split(separator: "\n").map(String.init)
        guard var line = lines.last(where: { $0.contains("ERROR") || $0.contains("Failed") }) ?? lines.last else {
            return "no error message"
        }
        if let marker = line.range(of: "last error was: ") { line = String(line[marker.upperBound...]) }
        // "2026/12/01 15:23:23 " in front of each line.
        if line.count > 20, line.first?.isNumber == true { line = String(line.dropFirst(20)) }
        for prefix in ["ERROR : ", "NOTICE: "] where line.hasPrefix(prefix) { line = String(line.dropFirst(prefix.count)) }
        if !secret.isEmpty { line = line.replacingOccurrences(of: secret, with: "(remote)") }
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.count > 300 ? String(trimmed.prefix(300)) + "…" : trimmed
    }
}
