import SystemCalls

/// The sd_notify protocol, without libsystemd: a datagram such as `READY=1` to the socket named
/// in `$NOTIFY_SOCKET`, which systemd sets for a `Type=notify` service. Nothing happens
/// without the variable (run by hand, or by a service manager that does not ask).
struct ServiceNotifier {
    let socket: String?

    init(environment: [String: String]) {
        socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The mount is serving: `systemctl start` returns, and units ordered after this one start.
    func ready() { send("READY=1") }

    /// The vault is unmounted and locked; the process ends next (after a stop, a signal, the
    /// idle timer or `dotsafe lock`).
    func stopping() { send("STOPPING=1") }

    private func send(_ state: String) {
        guard let socket else { return }
        // systemd does not answer; an error here changes nothing for the mount.
        try? Datagram.send(Array(state.utf8), to: socket)
    }
}
