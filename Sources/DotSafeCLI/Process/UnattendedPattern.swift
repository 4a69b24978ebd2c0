import Glibc
import SystemCalls
import VaultCore
import VaultCrypto

/// A pattern for unattended use (fstab, a systemd unit, a script), like gocryptfs's `-passfile`
/// and `-extpass`: the first line of a file, or what a command prints. The bytes are read
/// straight into locked memory and parsed there; they never become a `String` or `Data`.
///
/// A pattern file must be a regular file that belongs to the caller (or root) and that no one
/// else may read or write (no group or other permission bits), as ssh asks of a private key: a
/// file others can read hands them the vault, and one others can write lets them choose which
/// vault is mounted (and so receive what is written to it).
enum UnattendedPattern {
    /// More than any pattern (25 points of 3 bytes) with room for spaces and a line end.
    static let sizeLimit = 4096

    static func read(file path: String) throws -> Pattern {
        let descriptor: Int32
        do {
            // Non-blocking, so that a FIFO in its place is refused rather than waited on.
            descriptor = try SystemCall.open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK)
        } catch {
            if error.errno == ENOENT { throw CLIError.failure("pattern file \(path) does not exist") }
            throw CLIError.failure("cannot open pattern file \(path): \(String(cString: strerror(error.errno)))")
        }
        defer { SystemCall.close(descriptor) }
        let status = try SystemCall.status(descriptor)
        guard status.isRegular else { throw CLIError.failure("pattern file \(path) is not a regular file") }
        guard status.owner == SystemCall.userID || status.owner == 0 else {
            throw CLIError.failure("pattern file \(path) belongs to another user (uid \(status.owner))")
        }
        guard status.permissions & 0o077 == 0 else {
            let mode = String(status.permissions, radix: 8)
            throw CLIError.failure("pattern file \(path) is open to other users (mode 0\(mode)): chmod 600 \(path)")
        }
        return try parse(from: "pattern file \(path) holds") { buffer in
            do { return try SystemCall.readFully(descriptor, into: buffer) } catch let error as SystemError {
                throw CLIError.failure("cannot read pattern file \(path): \(String(cString: strerror(error.errno)))")
            }
        }
    }

    static func read(command: String) throws -> Pattern {
        try parse(from: "pattern command printed") { buffer in
            let result: (count: Int, termination: ProcessCalls.Termination)
            do { result = try ProcessCalls.runShell(command, output: buffer) } catch {
                throw CLIError.failure("cannot run the pattern command: \(error)")
            }
            // Cut off after too much output, the command may end with SIGPIPE: say what was wrong.
            if result.count == buffer.count { return result.count }
            switch result.termination {
            case .exited(0): return result.count
            case .exited(let code): throw CLIError.failure("pattern command failed (exit status \(code))")
            case .signalled(let number):
                throw CLIError.failure("pattern command was killed by signal \(number)")
            }
        }
    }

    /// Fills locked memory with `fill` (which returns how many bytes it wrote), then parses one
    /// line of it: a last line end (LF or CR LF) is dropped, any other line end is refused.
    /// `source` begins each message: "pattern file F holds", "pattern command printed".
    private static func parse(from source: String, _ fill: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> Pattern {
        let secret = try SecretBytes(count: sizeLimit + 1)
        defer { secret.wipe() }
        let count = try secret.withUnsafeMutableBytes { try fill($0) }
        guard count <= sizeLimit else { throw CLIError.failure("\(source) more than \(sizeLimit) bytes") }
        return try secret.withUnsafeBytes { bytes in
            var line = UnsafeRawBufferPointer(rebasing: bytes[..<count])
            if line.last == 0x0a { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
            if line.last == 0x0d { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
            guard !line.isEmpty else { throw CLIError.failure("\(source) no pattern") }
            guard !line.contains(0x0a) else { throw CLIError.failure("\(source) more than one line") }
            return try PatternReader.parse { try Pattern(parsing: line) }
        }
    }
}
