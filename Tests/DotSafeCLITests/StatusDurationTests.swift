@testable import DotSafeCLI
import Testing

/// `status`'s IDLE LOCK column takes whatever number a daemon sends: none may trap (an older
/// daemon took `--idle 99999999999999999999h`, and status died with SIGILL).
@Suite struct StatusDurationTests {
    @Test(arguments: [(12.0, "in 12s"), (250, "in 4m 10s"), (3720, "in 1h 2m"), (0, "in 0s"), (-5, "in 0s"),
                      (3_600_000, "in 1000h 0m"), (1e20, "in 277777777h 46m"), (.infinity, "in 277777777h 46m"),
                      (-.infinity, "in 0s"), (.nan, "?")])
    func anyNumberOfSecondsIsShown(_ seconds: Double, _ shown: String) {
        #expect(StatusCommand.duration(seconds) == shown)
    }
}
