import Dispatch
import Foundation
import Synchronization

/// Remote calls that overlap other work (issue 13: a sync's time beside `rclone copy`'s): each
/// rclone process costs a start of 0.3–0.6 s on a loaded machine, mostly waiting, so calls that
/// do not depend on each other or on the keys run at once.
extension RemoteStorage {
    /// Starts `list()` on another thread (`dotsafe sync` lists while it derives its keys); the
    /// function returned waits for the listing, and may be called again.
    public func listInBackground() -> @Sendable () throws(RemoteError) -> RemoteListing {
        let outcome = Outcome<RemoteListing>()
        Thread.detachNewThread { [self] in outcome.set(Result { () throws(RemoteError) in try list() }) }
        return { () throws(RemoteError) in try outcome.wait() }
    }

    /// Whole files, as `read(_:)` reads one, each by its own rclone process and all at once. Nil
    /// for a name with nothing there; a name `listed` (a listing's names) lacks is not asked for.
    public func read(_ names: [String], listed: Set<String>? = nil) throws(RemoteError) -> [[UInt8]?] {
        let outcomes = names.map { _ in Outcome<[UInt8]?>() }
        DispatchQueue.concurrentPerform(iterations: names.count) { index in
            let name = names[index]
            outcomes[index].set(Result { () throws(RemoteError) in listed?.contains(name) == false ? nil : try read(name) })
        }
        var files: [[UInt8]?] = []
        for outcome in outcomes { files.append(try outcome.wait()) }
        return files
    }
}

/// One result handed from the thread that makes it to those that wait for it.
private final class Outcome<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, RemoteError>?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func set(_ value: Result<Value, RemoteError>) {
        result.withLock { $0 = value }
        ready.signal()
    }

    func wait() throws(RemoteError) -> Value {
        ready.wait()
        ready.signal()
        return try result.withLock { $0! }.get()
    }
}
