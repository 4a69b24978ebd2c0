import CLibCrypto
/// Placeholder replaced by the crypto layer.
public enum VaultCryptoVersion { public static let name = "VaultCrypto" }
