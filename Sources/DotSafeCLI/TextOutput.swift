#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import SystemCalls

/// Where a command writes text: standard output or standard error of the process, or a
/// buffer in tests. Commands never call `print`, so tests capture everything in-process.
public protocol TextOutput: AnyObject, Sendable {
    /// Writes `text` as UTF-8, completely.
    func write(_ text: String)
}

extension TextOutput {
    /// Writes `line` followed by a newline.
    public func writeLine(_ line: String) {
        write(line + "\n")
    }
}

/// A `TextOutput` that writes straight to a file descriptor with `write(2)`, unbuffered, so
/// nothing is lost when the process exits and output order between streams is kept.
public final class FileDescriptorOutput: TextOutput {
    /// The process's standard output (descriptor 1).
    public static let standardOutput = FileDescriptorOutput(descriptor: 1)
    /// The process's standard error (descriptor 2).
    public static let standardError = FileDescriptorOutput(descriptor: 2)

    private let descriptor: Int32

    /// Wraps `descriptor`; the caller keeps ownership (it is never closed here).
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    public func write(_ text: String) {
        var text = text
        // EPIPE, a closed descriptor: nobody is listening, so the rest is dropped.
        text.withUTF8 { bytes in try? SystemCall.writeAll(descriptor, UnsafeRawBufferPointer(bytes)) }
    }
}

/// A `TextOutput` that keeps everything written to it, for tests.
public final class CapturedOutput: TextOutput {
    private let buffer = Mutex("")

    public init() {}

    /// Everything written so far.
    public var text: String {
        buffer.withLock { $0 }
    }

    public func write(_ text: String) {
        buffer.withLock { $0 += text }
    }
}
