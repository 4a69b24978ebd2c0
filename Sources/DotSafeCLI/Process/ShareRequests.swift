import VaultCore
import VaultFormat

/// The mount daemon's answers to `dotsafe contact` and `dotsafe share` on its lock channel
/// (`LockChannel`): one request line, one reply line.
///
/// - `contact` → `code CODE`, or `shared CODE` for a vault shared with you (CODE is then your
///   own vault's), or `failed: MESSAGE`;
/// - `share CODE` → `shared OWNCODE` (the grant is committed), or `failed: MESSAGE`;
/// - `unshare CODE` → `unshared` (the rotation is done), or `failed: MESSAGE`.
struct ShareRequests: Sendable {
    let vault: Vault
    let mountPoint: String

    static let contact = "contact"
    static let sharePrefix = "share "
    static let unsharePrefix = "unshare "
    static let unshared = "unshared"

    func answer(_ request: String) -> String? {
        if request == Self.contact {
            return reply { let (code, shared) = try vault.contactCode(); return (shared ? "shared " : "code ") + code.text }
        }
        if request.hasPrefix(Self.unsharePrefix) {
            return reply {
                let recipient = try ContactCode.parse(String(request.dropFirst(Self.unsharePrefix.count)))
                guard !vault.isReadOnly else {
                    return "failed: \(mountPoint) is mounted read-only, and withdrawing a grant writes into the storage; nothing was changed"
                }
                try vault.unshare(with: recipient)
                return Self.unshared
            }
        }
        guard request.hasPrefix(Self.sharePrefix) else { return nil }
        return reply {
            // The client checked the code; a hostile one gets the same one-line refusal.
            let recipient = try ContactCode.parse(String(request.dropFirst(Self.sharePrefix.count)))
            guard !vault.isReadOnly else {
                return "failed: \(mountPoint) is mounted read-only, and sharing writes a grant into the storage; nothing was changed"
            }
            try vault.share(with: recipient)
            return "shared " + (try vault.contactCode().code.text)
        }
    }

    private func reply(_ body: () throws -> String) -> String {
        do { return try body() } catch {
            return "failed: " + DotSafeCLI.describe(error)
        }
    }
}
