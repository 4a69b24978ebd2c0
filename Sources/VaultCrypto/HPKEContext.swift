extension HPKE {
    /// An encryption context (RFC 9180 §5.2, §5.3): the AEAD key, the base nonce and the exporter
    /// secret. A class so that its sequence number is never duplicated by a copy: each Seal or
    /// Open uses the next nonce, and a nonce must never serve twice under one key.
    public final class Context {
        public let aead: AEAD
        let key: SecretBytes
        let baseNonce: [UInt8]
        let exporterSecret: SecretBytes
        /// The number of messages sealed or opened so far; internal(set) for the RFC's vectors.
        public internal(set) var sequence: UInt64 = 0

        init(aead: AEAD, key: SecretBytes, baseNonce: [UInt8], exporterSecret: SecretBytes) {
            self.aead = aead; self.key = key; self.baseNonce = baseNonce; self.exporterSecret = exporterSecret
        }

        /// base_nonce XOR I2OSP(seq, Nn).
        func nonce() -> [UInt8] {
            var nonce = baseNonce
            for index in 0..<8 { nonce[nonceSize - 1 - index] ^= UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(index))) }
            return nonce
        }

        /// ContextS.Seal: ciphertext || tag.
        public func seal(aad: [UInt8], plaintext: [UInt8]) throws -> [UInt8] {
            try checkSequence()
            let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce(), aad: aad, strength: aead.strength)
            sequence += 1
            return sealed
        }

        /// ContextR.Open: the plaintext, or `.authenticationFailed` (which says nothing of why).
        public func open(aad: [UInt8], ciphertext: [UInt8]) throws -> [UInt8] {
            try checkSequence()
            let opened = try AESGCM.open(ciphertext, key: key, nonce: nonce(), aad: aad, strength: aead.strength)
            sequence += 1
            return opened
        }

        /// Context.Export (RFC 9180 §5.3): `count` bytes bound to this context and `exporterContext`.
        public func export(context exporterContext: [UInt8], count: Int) throws -> SecretBytes {
            try HPKE.labeledExpand(suite: suiteID(aead), prk: exporterSecret, label: "sec", info: exporterContext, count: count)
        }

        /// Erases the keys now; the context can do nothing afterwards.
        public func wipe() {
            key.wipe()
            exporterSecret.wipe()
        }

        /// RFC 9180's MessageLimitReachedError, reached only after 2^64 − 1 messages here.
        private func checkSequence() throws {
            guard sequence < UInt64.max else { throw CryptoError.invalidInput("HPKE message limit reached") }
        }
    }
}
