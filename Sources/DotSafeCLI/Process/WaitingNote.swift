import Foundation
import Synchronization

/// A line on standard error when a daemon takes long over work that is never given up on (a
/// lock's last commit and re-creation, a share's grant, a withdrawal's new keys): a stopped or
/// hung daemon must not keep the user waiting in silence. From `patienceSeconds` on it looks at
/// the daemon each second: a stopped one is said as such at once, a running one once `patience`
/// has passed (a lock's is longer: its re-creation budget). `cancel()` when the answer came.
struct WaitingNote {
    /// Seconds before the first look at the daemon, and the patience of work of no known size.
    static let patienceSeconds = 5

    private let timer: any DispatchSourceTimer

    /// `doing` says what the daemon of `record` is waited for: "lock it". `patience` is asked
    /// at the first look, on the note's thread: the request is not held up by it (a lock's
    /// lists the storage).
    init(for record: MountRecord, doing: String, patience: @escaping @Sendable () -> Double = { Double(patienceSeconds) },
         context: CommandContext) {
        let begun = DispatchTime.now().uptimeNanoseconds
        let waiting = "\(DotSafeCLI.name): still waiting for the daemon of \(record.mountPoint) (pid \(record.pid)) to \(doing): "
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + .seconds(Self.patienceSeconds), repeating: .seconds(1))
        let limit = Patience(patience)
        timer.setEventHandler { [stderr = context.standardError, pid = record.pid] in
            if Self.isStopped(pid) {
                stderr.writeLine(waiting + "it is stopped ('kill -CONT \(pid)' lets it go on)")
            } else if Double(DispatchTime.now().uptimeNanoseconds - begun) / 1e9 >= limit.seconds {
                stderr.writeLine(waiting + "it may be writing a lot, or be hung")
            } else {
                return
            }
            timer.cancel()
        }
        timer.resume()
        self.timer = timer
    }

    func cancel() { timer.cancel() }

    /// The patience, asked once.
    private final class Patience: Sendable {
        private let asked: Mutex<Double?> = Mutex(nil)
        private let ask: @Sendable () -> Double

        init(_ ask: @escaping @Sendable () -> Double) { self.ask = ask }

        var seconds: Double {
            asked.withLock { value in
                if value == nil { value = ask() }
                return value!
            }
        }
    }

    /// Whether process `pid` is stopped (by a signal or a debugger): the state after the
    /// command's name in /proc/PID/stat, a name that may itself hold ") ".
    static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.range(of: ")", options: .backwards) else { return false }
        let state = stat[end.upperBound...].drop { $0 == " " }.first
        return state == "T" || state == "t"
    }
}
