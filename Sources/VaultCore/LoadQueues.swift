import Dispatch
import Synchronization

/// Where chunks are loaded ahead of a sequential reader: serial queues taken in turn, one per
/// chunk ahead, so that that many storage reads wait on the disk at once. Dispatch's global
/// queue runs about one thread per core on Linux, and a load spends most of its time waiting
/// for its `pread`: on two cores at most two chunk files were read at a time, the disk idle
/// between (strace, docs/PERFORMANCE.md "Loads ahead on queues of their own"). Queues made with
/// a label get threads of their own, not counted against the cores.
final class LoadQueues: Sendable {
    static let shared = LoadQueues(count: ChunkStore.readAhead)

    private let queues: [DispatchQueue]
    private let turn = Atomic<Int>(0)

    init(count: Int) {
        queues = (0..<count).map { DispatchQueue(label: "dotsafe.load.\($0)") }
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        let index = turn.add(1, ordering: .relaxed).newValue
        queues[index % queues.count].async(execute: job)
    }
}
