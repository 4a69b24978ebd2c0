/// Which keyring a command means (R-KEY-4): `--keyring PATH` or `DOTSAFE_KEYRING` or the default
/// file, or `--keyring secret-service`. A file that records "the keyring is in the Secret
/// Service" sends every command there; nothing falls back to another keyring.
public struct KeyringLocation: Equatable, Sendable {
    /// The `--keyring` value that chooses the Secret Service.
    public static let secretServiceName = "secret-service"

    /// The keyring file, or the file that records the Secret Service choice.
    public let path: String
    /// `--keyring secret-service` (or `DOTSAFE_KEYRING=secret-service`) was given.
    public let namesSecretService: Bool

    /// `option` is `--keyring`'s value, or nil when it was not given.
    public init(option: String?, environment: [String: String]) {
        let chosen = option ?? environment["DOTSAFE_KEYRING"]
        namesSecretService = chosen == Self.secretServiceName
        if namesSecretService {
            // The choice is recorded where the file keyring would be.
            var rest = environment
            if rest["DOTSAFE_KEYRING"] == Self.secretServiceName { rest["DOTSAFE_KEYRING"] = nil }
            path = FileKeyringBackend.path(option: option == Self.secretServiceName ? nil : option, environment: rest)
        } else {
            path = FileKeyringBackend.path(option: option, environment: environment)
        }
    }

    /// The backend that holds the keyring now: the Secret Service when named or recorded,
    /// else the file.
    public func backend(environment: [String: String]) throws -> any KeyringBackend {
        let file = FileKeyringBackend(path: path)
        if namesSecretService { return SecretServiceKeyringBackend(recordPath: path, environment: environment) }
        switch try file.content() {
        case .record(let name) where name == KeyringRecord.secretService:
            return SecretServiceKeyringBackend(recordPath: path, environment: environment)
        case .record(let name):
            throw KeyringError.unknownBackend(path: path, name: name)
        case .absent, .items:
            return file
        }
    }
}
