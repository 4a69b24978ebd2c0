import CLibCrypto

/// Turns OpenSSL's "1 on success" convention into Swift errors in one place, so that every wrapper
/// also empties the thread's OpenSSL error queue: a stale entry left there would otherwise be
/// blamed on the next, unrelated call on the same libfuse thread.
enum OpenSSLCall {
    /// Throws `.library(function)` unless `result == 1`.
    @inline(__always)
    static func check(_ result: Int32, _ function: StaticString) throws {
        guard result == 1 else { throw failure(function) }
    }

    /// Returns the non-nil pointer, or throws `.library(function)`.
    @inline(__always)
    static func check<T>(_ pointer: T?, _ function: StaticString) throws -> T {
        guard let pointer else { throw failure(function) }
        return pointer
    }

    /// Clears the error queue and builds the error to throw.
    static func failure(_ function: StaticString) -> CryptoError {
        ERR_clear_error()
        return .library(function.description)
    }

    /// Converts a Swift length to the `int` OpenSSL wants, refusing what would be truncated.
    @inline(__always)
    static func int32(_ count: Int, _ what: StaticString) throws -> Int32 {
        guard count >= 0, count <= Int(Int32.max) else {
            throw CryptoError.invalidInput("\(what) too long: \(count) bytes")
        }
        return Int32(count)
    }
}
