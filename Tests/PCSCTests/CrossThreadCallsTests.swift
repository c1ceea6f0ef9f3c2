import Dispatch
import Testing
@testable import PCSC

/// The count of calls into libpcsclite that the exit handler waits for (no pcscd needed: the
/// gate is driven step by step, another thread's steps run at the point where a thread could be
/// preempted).
@Suite("Calls into libpcsclite and the exit handler")
struct CrossThreadCallsTests {
    @Test("a call that came out before the exit began does not tell the exit the calls drained while another, come in since, is still in the library")
    func lastOutIsDecidedWithTheCount() {
        let gate = CallGate()
        #expect(gate.enter())   // A: in the library
        var exitSawInFlight = -1
        gate.leave(afterCount: {
            // A's count went down — and before A goes on, another thread's call C comes in,
            // then the process starts exiting.
            #expect(gate.enter())   // C: admitted (not exiting yet)
            exitSawInFlight = gate.beginExit()
        })
        #expect(exitSawInFlight == 1)   // the exit sees C in the library and waits for it…
        #expect(!gate.waitDrained(until: .now()))   // …and is not told they drained: C is still in
        #expect(!gate.enter())   // a call once the exit began is refused (and still counted out)
        gate.leave()
        gate.leave()   // C comes out, the last one
        #expect(gate.waitDrained(until: .now()))
    }

    @Test("an exit with nothing in flight sees none; every call after it is refused")
    func exitWithNothingInFlight() {
        let gate = CallGate()
        #expect(gate.enter())
        gate.leave()
        #expect(!gate.isExiting)
        #expect(gate.beginExit() == 0)
        #expect(gate.isExiting)
        #expect(!gate.enter())
        gate.leave()
        #expect(gate.isExiting)
    }
}
