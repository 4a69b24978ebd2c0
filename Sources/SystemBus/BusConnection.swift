import CDBus
import Dispatch
import Foundation
import Glibc
import Synchronization

/// A private connection to a D-Bus bus through libdbus-1: method calls with a deadline, and the
/// signals that arrive. The one file that touches libdbus's C; callers see `BusValue`s.
///
/// Made on one thread and then used by one thread at a time (the caller's watcher thread):
/// libdbus's own locks make that safe, hence `@unchecked Sendable`.
public final class BusConnection: @unchecked Sendable {
    public static let busName = "org.freedesktop.DBus"
    public static let busPath = "/org/freedesktop/DBus"

    private let raw: OpaquePointer
    /// How long a call waits for its reply.
    public let timeoutMilliseconds: Int32

    private init(raw: OpaquePointer, timeoutMilliseconds: Int32) {
        self.raw = raw
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    deinit {
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
    }

    /// Connects to the bus at `address` (a D-Bus address such as `unix:path=/run/dbus/system_bus_socket`)
    /// and says hello, all within `timeoutMilliseconds`: a bus that accepts and never answers
    /// is as unreachable as one that is not there.
    public static func open(address: String, timeoutMilliseconds: Int32 = 3000) throws(BusError) -> BusConnection {
        // libdbus waits without a deadline while it authenticates (a call's timeout starts only
        // after that), so the whole opening runs on a thread of its own; one that never ends is
        // left behind with its connection, to go when the process does.
        let outcome = Mutex<Result<BusConnection, BusError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let opened = Result { () throws(BusError) in try openWaiting(address: address, timeoutMilliseconds: timeoutMilliseconds) }
            outcome.withLock { $0 = opened }
            done.signal()
        }
        guard done.wait(timeout: .now() + .milliseconds(Int(timeoutMilliseconds))) == .success,
              let opened = outcome.withLock({ $0 }) else {
            throw .unreachable("the bus at \(address) did not answer within \(timeoutMilliseconds / 1000) seconds")
        }
        return try opened.get()
    }

    private static func openWaiting(address: String, timeoutMilliseconds: Int32) throws(BusError) -> BusConnection {
        _ = dbus_threads_init_default()
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let raw = dbus_connection_open_private(address, &error) else {
            throw .unreachable(error.message.map { String(cString: $0) } ?? "cannot connect to \(address)")
        }
        // libdbus would otherwise call exit() when the bus goes away.
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let connection = BusConnection(raw: raw, timeoutMilliseconds: timeoutMilliseconds)
        // dbus_bus_register waits 25 s for this; the same call by hand keeps our deadline.
        do {
            _ = try connection.call(destination: busName, path: busPath, interface: busName, member: "Hello")
        } catch {
            throw .unreachable("the bus at \(address) did not answer: \(error)")
        }
        return connection
    }

    /// Calls a method and returns the arguments of its reply.
    public func call(destination: String, path: String, interface: String, member: String,
                     arguments: [BusValue] = []) throws(BusError) -> [BusValue] {
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else {
            throw .callFailed(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot make a message")
        }
        defer { dbus_message_unref(message) }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(message, &iterator)
        for argument in arguments { try Self.append(argument, to: &iterator) }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(raw, message, timeoutMilliseconds, &error) else {
            throw .callFailed(name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                              message: error.message.map { String(cString: $0) } ?? "")
        }
        defer { dbus_message_unref(reply) }
        return Self.arguments(of: reply)
    }

    /// The next signal that arrived, after waiting at most `waitMilliseconds` for one; nil when
    /// none came. Other messages (a method call to us) are dropped unanswered.
    public func nextSignal(waitMilliseconds: Int32) throws(BusError) -> BusSignal? {
        var waited = false
        while true {
            if let message = dbus_connection_pop_message(raw) {
                defer { dbus_message_unref(message) }
                guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else { continue }
                func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
                let signal = BusSignal(sender: text(dbus_message_get_sender(message)), path: text(dbus_message_get_path(message)),
                                       interface: text(dbus_message_get_interface(message)),
                                       member: text(dbus_message_get_member(message)), arguments: Self.arguments(of: message))
                // libdbus's own word that the connection is gone (it never comes from the bus).
                if signal.sender == nil, signal.interface == "org.freedesktop.DBus.Local", signal.member == "Disconnected" {
                    throw .disconnected
                }
                return signal
            }
            guard dbus_connection_get_is_connected(raw) != 0 else { throw .disconnected }
            if waited { return nil }
            _ = dbus_connection_read_write(raw, waitMilliseconds)
            waited = true
        }
    }

    // MARK: Arguments

    private enum TypeCode {
        static let boolean = code("b"), uint32 = code("u"), string = code("s"), objectPath = code("o")
        static let fileDescriptor = code("h"), variant = code("v"), structure = code("r")
        static func code(_ letter: Unicode.Scalar) -> Int32 { Int32(letter.value) }
    }

    private static func append(_ value: BusValue, to iterator: inout DBusMessageIter) throws(BusError) {
        let appended: dbus_bool_t
        switch value {
        case .string(let text), .objectPath(let text):
            let type = if case .string = value { TypeCode.string } else { TypeCode.objectPath }
            appended = text.withCString { pointer in
                var field: UnsafePointer<CChar>? = pointer
                return dbus_message_iter_append_basic(&iterator, type, &field)
            }
        case .boolean(let flag):
            var field: dbus_bool_t = flag ? 1 : 0
            appended = dbus_message_iter_append_basic(&iterator, TypeCode.boolean, &field)
        case .uint32(let number):
            var field = number
            appended = dbus_message_iter_append_basic(&iterator, TypeCode.uint32, &field)
        default:
            throw .callFailed(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "cannot send \(value)")
        }
        guard appended != 0 else { throw .callFailed(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot add an argument") }
    }

    private static func arguments(of message: OpaquePointer) -> [BusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
        return values(&iterator)
    }

    private static func values(_ iterator: inout DBusMessageIter) -> [BusValue] {
        var values: [BusValue] = []
        while case let type = dbus_message_iter_get_arg_type(&iterator), type != 0 {
            values.append(value(&iterator, type: type))
            guard dbus_message_iter_next(&iterator) != 0 else { break }
        }
        return values
    }

    private static func value(_ iterator: inout DBusMessageIter, type: Int32) -> BusValue {
        switch type {
        case TypeCode.string, TypeCode.objectPath:
            var field: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(&iterator, &field)
            let text = field.map { String(cString: $0) } ?? ""
            return type == TypeCode.string ? .string(text) : .objectPath(text)
        case TypeCode.boolean:
            var field: dbus_bool_t = 0
            dbus_message_iter_get_basic(&iterator, &field)
            return .boolean(field != 0)
        case TypeCode.uint32:
            var field: UInt32 = 0
            dbus_message_iter_get_basic(&iterator, &field)
            return .uint32(field)
        case TypeCode.fileDescriptor:
            // libdbus hands out a duplicate: ours to close.
            var field: Int32 = -1
            dbus_message_iter_get_basic(&iterator, &field)
            return .fileDescriptor(field)
        case TypeCode.variant, TypeCode.structure:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            let contents = values(&inner)
            if type == TypeCode.structure { return .structure(contents) }
            return contents.first.map { .variant($0) } ?? .other(type: type)
        default:
            return .other(type: type)
        }
    }
}
