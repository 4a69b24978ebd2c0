import CLibCrypto

/// SHA-256 (EVP_Digest): checksums of files that must not be silently damaged, such as the
/// keyring. Not for keys: HKDF derives those.
public enum SHA256 {
    public static let size = 32

    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { output in
                EVP_Digest(input.baseAddress, input.count, output.bindMemory(to: UInt8.self).baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // EVP_Digest with SHA-256 fails only if the library is broken: nothing to recover.
        precondition(ok == 1 && length == UInt32(size), "EVP_Digest(SHA-256) failed")
        return digest
    }
}
