import CSecret
import Dispatch
import Glibc

/// The desktop's Secret Service (GNOME Keyring, KWallet) through libsecret: one item of bytes in
/// the default collection, found by DotSafe's schema and `keyring = default`. The one file of the
/// keyring that touches C; everything above it sees bytes and `KeyringError.secretService`.
///
/// It never waits long and never starts a bus: without `DBUS_SESSION_BUS_ADDRESS` nothing is
/// called (libsecret would otherwise try to autolaunch one), and every call has a deadline.
enum SecretServiceCalls {
    static let attributeValue = "default"
    static let label = "DotSafe keyring (the salt that turns unlock patterns into keys)"
    /// How long the bus and the service may take to answer.
    static let answerSeconds = 3.0
    /// How long a person has to answer an unlock prompt, where one can be shown.
    static let promptSeconds = 120.0

    /// The stored bytes, or nil when the Secret Service holds no DotSafe keyring.
    static func read(environment: [String: String]) throws -> [UInt8]? {
        let session = try Session(environment: environment)
        defer { session.close() }
        // A locked collection hides its items: without this, "locked" would read as "no keyring".
        try session.unlockDefaultCollection()
        let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue | SECRET_SEARCH_UNLOCK.rawValue | SECRET_SEARCH_LOAD_SECRETS.rawValue)
        let found = try session.call(prompting: true) { cancellable, error in
            secret_service_search_sync(session.service, dotsafe_secret_schema(), session.attributes, flags, cancellable, error)
        }
        guard let found else { return nil }
        defer { g_list_free_full(found, g_object_unref) }
        let item = found.pointee.data.assumingMemoryBound(to: SecretItem.self)
        guard secret_item_get_locked(item) == 0, let value = secret_item_get_secret(item) else { throw Self.locked }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length = 0
        guard let bytes = secret_value_get(value, &length) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: length))
    }

    /// Stores `bytes`, replacing DotSafe's item if there is one.
    static func write(_ bytes: [UInt8], environment: [String: String]) throws {
        let session = try Session(environment: environment)
        defer { session.close() }
        try session.unlockDefaultCollection()
        let value = bytes.withUnsafeBytes { raw in
            secret_value_new(raw.baseAddress!.assumingMemoryBound(to: gchar.self), gssize(raw.count), "application/octet-stream")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        let stored = try session.call(prompting: true) { cancellable, error in
            secret_service_store_sync(session.service, dotsafe_secret_schema(), session.attributes, SECRET_COLLECTION_DEFAULT,
                                      label, value, cancellable, error)
        }
        guard stored != 0 else { throw KeyringError.secretService("the Secret Service did not store the keyring") }
    }

    /// Deletes DotSafe's item; nothing to delete is fine.
    static func remove(environment: [String: String]) throws {
        let session = try Session(environment: environment)
        defer { session.close() }
        _ = try session.call(prompting: true) { cancellable, error in
            secret_service_clear_sync(session.service, dotsafe_secret_schema(), session.attributes, cancellable, error)
        }
    }

    static let locked = KeyringError.secretService(
        "the Secret Service's keyring is locked and could not be unlocked (no prompt can be shown here): unlock it in your desktop session, then try again")

    /// A connection to the service, with DotSafe's attributes, for one operation.
    private final class Session {
        let service: UnsafeMutablePointer<SecretService>
        let attributes: OpaquePointer
        /// A person can answer a prompt only where there is a display to show it on.
        let canPrompt: Bool

        init(environment: [String: String]) throws {
            // GDBus reads the process's environment; a different one handed in (tests, the
            // daemon) must not make it talk to a bus the caller did not mean.
            let address = environment["DBUS_SESSION_BUS_ADDRESS"] ?? ""
            guard !address.isEmpty, getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }) == address else {
                throw KeyringError.secretService(
                    "cannot reach the Secret Service: there is no session bus here (DBUS_SESSION_BUS_ADDRESS is not set); DotSafe does not fall back to another keyring")
            }
            canPrompt = !(environment["DISPLAY"] ?? "").isEmpty || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
            let flags = SecretServiceFlags(rawValue: SECRET_SERVICE_OPEN_SESSION.rawValue)
            let unreachable = "no Secret Service answers on the session bus (is GNOME Keyring or KWallet running?)"
            service = try SecretServiceCalls.run(seconds: answerSeconds, failure: unreachable) { cancellable, error in
                secret_service_get_sync(flags, cancellable, error)
            }.unwrap(or: unreachable)
            attributes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)
            g_hash_table_insert(attributes, g_strdup("keyring"), g_strdup(attributeValue))
        }

        func close() {
            g_hash_table_unref(attributes)
            g_object_unref(service)
            // The next operation connects again: a long-running daemon keeps no bus connection.
            secret_service_disconnect()
        }

        func call<T>(prompting: Bool, _ body: (UnsafeMutablePointer<GCancellable>?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws -> T {
            try SecretServiceCalls.run(seconds: prompting && canPrompt ? promptSeconds : answerSeconds, failure: "the Secret Service failed", body)
        }

        /// Items go to the default collection; a locked one is unlocked (a prompt) or refused.
        func unlockDefaultCollection() throws {
            let flags = SecretCollectionFlags(rawValue: SECRET_COLLECTION_NONE.rawValue)
            let collection = try call(prompting: false) { cancellable, error in
                secret_collection_for_alias_sync(service, SECRET_COLLECTION_DEFAULT, flags, cancellable, error)
            }
            guard let collection else {
                throw KeyringError.secretService("the Secret Service has no default keyring to store in: make one in your desktop's keyring tool")
            }
            defer { g_object_unref(collection) }
            guard secret_collection_get_locked(collection) != 0 else { return }
            let objects = g_list_append(nil, collection)
            defer { g_list_free(objects) }
            var unlocked: UnsafeMutablePointer<GList>?
            let count = try call(prompting: true) { cancellable, error in
                secret_service_unlock_sync(service, objects, cancellable, &unlocked, error)
            }
            if let unlocked { g_list_free_full(unlocked, g_object_unref) }
            guard count > 0 else { throw SecretServiceCalls.locked }
        }
    }

    /// Runs one libsecret call with a deadline: a watchdog cancels it when `seconds` pass.
    private static func run<T>(seconds: Double, failure: String, _ body: (UnsafeMutablePointer<GCancellable>?, UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws -> T {
        let cancellable = Cancellable()
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { cancellable.cancel() }
        defer { cancellable.release() }
        var error: UnsafeMutablePointer<GError>?
        let result = body(cancellable.pointer, &error)
        if let error {
            defer { g_error_free(error) }
            if g_cancellable_is_cancelled(cancellable.pointer) != 0 {
                throw KeyringError.secretService("the Secret Service did not answer within \(Int(seconds)) seconds")
            }
            let text = String(cString: error.pointee.message)
            if text.lowercased().contains("locked") { throw locked }
            throw KeyringError.secretService("\(failure): \(text)")
        }
        return result
    }

    /// A GCancellable shared with the watchdog. `@unchecked Sendable` holds because GLib documents
    /// `g_cancellable_cancel` as safe from any thread, and each side holds its own reference.
    private final class Cancellable: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<GCancellable>
        init() {
            pointer = g_cancellable_new()
            g_object_ref(pointer)  // the watchdog's reference
        }
        func cancel() {
            g_cancellable_cancel(pointer)
            g_object_unref(pointer)
        }
        func release() { g_object_unref(pointer) }
    }
}

extension Optional {
    fileprivate func unwrap(or message: String) throws -> Wrapped {
        guard let self else { throw KeyringError.secretService(message) }
        return self
    }
}
