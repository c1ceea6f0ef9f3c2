import Foundation
import Testing
import Timing

@Suite("BlockingExecutor.run: the body starts on the executor's threads")
struct BlockingExecutorRunTests {
    /// `withTaskExecutorPreference` alone left a body's synchronous start on the caller's
    /// (cooperative) thread now and then: GraphQL's first ledger read ran there in
    /// WebRoutesThreadTests about once a run under load.
    @Test("a body that never suspends runs on the executor, every time")
    func synchronousBodyRunsOnTheExecutor() async {
        let executor = BlockingExecutor(threads: 1, name: "hop-test")
        var elsewhere = 0
        for _ in 0..<500 {
            if await !executor.run({ executor.isCurrent }) { elsewhere += 1 }
        }
        #expect(elsewhere == 0)
    }


    @Test("a typed error from the body comes out as it is")
    func typedErrorPassesThrough() async {
        struct Refused: Error, Equatable {}
        let executor = BlockingExecutor(threads: 1, name: "hop-err")
        await #expect(throws: Refused()) {
            try await executor.run { () throws(Refused) -> Int in throw Refused() }
        }
    }
}
