import Testing
import TestSupport
@testable import PaymentGateway
import Storage

@Suite("FileLock: the lease of a live process", .temporaryDirectories)
struct FileLockTests {
    @Test("the async acquire waits for the holder, off the cooperative pool: several waiters, and other work still runs")
    func asyncAcquireWaitsForTheHolder() async throws {
        let path = try temporaryDirectory() + "/lease.lock"
        let held = try #require(try FileLock.tryAcquire(path))
        // More waiters than the pool has threads: were they blocking its threads, nothing else could run.
        // Each, once it has the lock, checks that nobody else can take it, then lets go.
        let waiters = (0..<6).map { _ in
            Task { () async throws(FileLock.Failure) -> Bool in
                let lock = try await FileLock.acquire(path)
                defer { lock.release() }
                return try FileLock.tryAcquire(path) == nil
            }
        }
        #expect(await Task { 6 * 7 }.value == 42)
        #expect(try FileLock.tryAcquire(path) == nil)
        held.release()
        for waiter in waiters {
            #expect(try await waiter.value)
        }
        let free = try #require(try FileLock.tryAcquire(path))
        free.release()
    }
}
