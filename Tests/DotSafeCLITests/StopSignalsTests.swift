import Glibc
import SystemCalls
import Testing

/// `StopSignals` set up and taken down many times in a row: its pipe's reader must be gone
/// before the pipe's ends close. A dispatch read source there once crashed a sync on its way
/// out (SIGSEGV in libdispatch's event loop), one run in thousands. No signal is raised here:
/// other tests run `dotsafe sync` in this process, and a caught signal would stop them.
@Suite struct StopSignalsTests {
    @Test func watchingManyTimesInARowEndsEachTimeWithNothingCaught() throws {
        for round in 0..<20_000 {
            let ran = try StopSignals.watching { round }
            #expect(ran == round)
        }
        #expect(StopSignals.caught == nil)
    }
}
