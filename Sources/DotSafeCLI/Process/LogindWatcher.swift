import Foundation
import Glibc
import SystemBus

/// `mount --lock-on-suspend` (R-INT-3): locks the vault when logind announces sleep
/// (`PrepareForSleep(true)` on the system bus) or locks the login session the mount was started
/// in (`Session.Lock`), so that no key is in memory while the machine sleeps or the screen is
/// locked.
///
/// Anyone on the system bus may send a signal with logind's path, interface and member, even
/// straight to our connection: the other local user would then lock our vault at will. A signal
/// counts only when the bus says its sender is the connection that owns `org.freedesktop.login1`
/// right now (`GetNameOwner`, asked at each signal: logind may have restarted), and a `Lock`
/// only for our own session's path.
///
/// A delay inhibitor (`Inhibit("sleep", …, "delay")`) makes logind wait for the lock before the
/// machine sleeps, up to its `InhibitDelayMaxSec`; it is held until the daemon exits, which is
/// once the vault is locked. Without one (logind refused it) the lock still runs, during sleep
/// at worst finishing on resume.
final class LogindWatcher: Sendable {
    enum Event: Equatable { case sleep, sessionLocked, busLost }

    /// Where the system bus is: `$DBUS_SYSTEM_BUS_ADDRESS` (the tests' own bus), else the standard socket.
    static let addressVariable = "DBUS_SYSTEM_BUS_ADDRESS"
    static let standardAddress = "unix:path=/run/dbus/system_bus_socket"
    static let logind = "org.freedesktop.login1"
    static let managerPath = "/org/freedesktop/login1"
    static let managerInterface = "org.freedesktop.login1.Manager"
    static let sessionInterface = "org.freedesktop.login1.Session"

    private let bus: BusConnection
    /// The object path of the login session this process runs in; nil outside one (a systemd
    /// user service): then only sleep locks the vault.
    let sessionPath: String?
    /// The delay inhibitor's descriptor, closed when the process exits; nil when logind refused one.
    let inhibitor: Int32?

    private init(bus: BusConnection, sessionPath: String?, inhibitor: Int32?) {
        self.bus = bus
        self.sessionPath = sessionPath
        self.inhibitor = inhibitor
    }

    /// Connects and subscribes, or throws a one-line reason: the user asked for a protection that
    /// cannot work without the system bus and logind, so the mount does not go ahead without it.
    static func start(environment: [String: String]) throws -> LogindWatcher {
        let address = environment[addressVariable].flatMap { $0.isEmpty ? nil : $0 } ?? standardAddress
        let bus: BusConnection
        do { bus = try BusConnection.open(address: address) } catch {
            throw CLIError.failure("--lock-on-suspend needs the system bus, which does not answer (\(error)); the vault was not mounted")
        }
        guard (try? owner(on: bus)) != nil else {
            throw CLIError.failure("--lock-on-suspend needs logind (\(logind)), which is not on the system bus; the vault was not mounted")
        }
        let session = try? bus.call(destination: logind, path: managerPath, interface: managerInterface, member: "GetSessionByPID",
                                    arguments: [.uint32(UInt32(getpid()))]).first?.text
        var rules = [rule(path: managerPath, interface: managerInterface, member: "PrepareForSleep")]
        if let session { rules.append(rule(path: session, interface: sessionInterface, member: "Lock")) }
        do {
            for rule in rules {
                _ = try bus.call(destination: BusConnection.busName, path: BusConnection.busPath, interface: BusConnection.busName,
                                 member: "AddMatch", arguments: [.string(rule)])
            }
        } catch {
            throw CLIError.failure("--lock-on-suspend: the system bus does not pass on logind's signals (\(error)); the vault was not mounted")
        }
        // No mount point in the reason: every user can list inhibitors (systemd-inhibit --list).
        let inhibitor = try? bus.call(destination: logind, path: managerPath, interface: managerInterface, member: "Inhibit",
                                      arguments: [.string("sleep"), .string("dotsafe"), .string("Lock encrypted vaults"), .string("delay")])
        var descriptor: Int32?
        if case .fileDescriptor(let fd)? = inhibitor?.first { descriptor = fd }
        return LogindWatcher(bus: bus, sessionPath: session, inhibitor: descriptor)
    }

    /// Watches on a thread of its own while `isServing`; calls `react` once, for the first
    /// signal that counts or when the bus goes away (logind's signals could no longer arrive).
    func watch(while isServing: @escaping @Sendable () -> Bool, react: @escaping @Sendable (Event) -> Void) {
        Thread.detachNewThread { [self] in
            while isServing() {
                let signal: BusSignal?
                do { signal = try bus.nextSignal(waitMilliseconds: 500) } catch {
                    if isServing() { react(.busLost) }
                    return
                }
                if let signal, let event = event(signal) {
                    react(event)
                    return
                }
            }
        }
    }

    /// The event a signal announces, if it is one of logind's own and says sleep or lock.
    func event(_ signal: BusSignal) -> Event? {
        let event: Event
        switch (signal.path, signal.interface, signal.member) {
        case (Self.managerPath, Self.managerInterface, "PrepareForSleep") where signal.arguments == [.boolean(true)]:
            event = .sleep
        case (sessionPath, Self.sessionInterface, "Lock") where sessionPath != nil:
            event = .sessionLocked
        default:
            return nil
        }
        guard let sender = signal.sender, let owner = try? Self.owner(on: bus), sender == owner else { return nil }
        return event
    }

    /// The unique name of the connection that owns logind's name now.
    private static func owner(on bus: BusConnection) throws -> String? {
        try bus.call(destination: BusConnection.busName, path: BusConnection.busPath, interface: BusConnection.busName,
                     member: "GetNameOwner", arguments: [.string(logind)]).first?.text
    }

    /// A match rule for logind's signal; the bus checks the sender's name too, and `event` again.
    private static func rule(path: String, interface: String, member: String) -> String {
        "type='signal',sender='\(logind)',path='\(path)',interface='\(interface)',member='\(member)'"
    }
}
