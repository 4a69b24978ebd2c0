import CLibCrypto

/// SHA-256 for comparing whole files with the vectors (OpenSSL's one-shot EVP_Digest).
func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let ok = bytes.withUnsafeBytes { input in
        digest.withUnsafeMutableBufferPointer { out in
            EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, EVP_sha256(), nil)
        }
    }
    precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
    return digest
}
