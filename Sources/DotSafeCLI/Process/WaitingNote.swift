import Foundation

/// A line on standard error once a daemon has taken `patienceSeconds` over work that is never
/// given up on (a lock's last commit, a share's grant, a withdrawal's new keys): a stopped or
/// hung daemon must not keep the user waiting in silence. `cancel()` when the answer came.
struct WaitingNote {
    /// Seconds after which the note is written.
    static let patienceSeconds = 5

    private let item: DispatchWorkItem

    /// `doing` says what the daemon of `record` is waited for: "lock it".
    init(for record: MountRecord, doing: String, context: CommandContext) {
        item = DispatchWorkItem { [stderr = context.standardError] in
            stderr.writeLine("\(DotSafeCLI.name): still waiting for the daemon of \(record.mountPoint) (pid \(record.pid)) to \(doing): "
                             + "it may be writing a lot, or be stopped")
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Self.patienceSeconds), execute: item)
    }

    func cancel() { item.cancel() }
}
