// The libFuzzer entry points. Compiled only by `scripts/dev fuzz` (swiftc -sanitize=fuzzer,address
// against the modules built with the same flags); never part of `swift build` or `swift test`.
//
// One binary serves every harness: it is linked once and reached through links named
// `fuzz-<harness>` (or with TAPEMU_FUZZ_TARGET=<harness>), so libFuzzer's fork and merge modes,
// which run argv[0] again, stay on the same harness.
import Dispatch
import FuzzTargets
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

nonisolated(unsafe) var selected: FuzzTarget?

/// The harness this process runs: `TAPEMU_FUZZ_TARGET`, else the `fuzz-<harness>` name it was run as.
func harnessName(_ argv0: String) -> String {
    if let env = getenv("TAPEMU_FUZZ_TARGET") { return String(cString: env) }
    let base = argv0.split(separator: "/").last.map(String.init) ?? argv0
    return base.hasPrefix("fuzz-") ? String(base.dropFirst(5)) : base
}

/// Writes one line to stderr (unbuffered: the process may abort right after).
func printError(_ message: String) {
    var line = "tapemu-fuzz: \(message)\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

func fail(_ message: String) -> Never {
    printError(message)
    exit(2)
}

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    // `scripts/dev fuzz` asks the binary for the harness names (FuzzTarget.all owns the list).
    if getenv("TAPEMU_FUZZ_LIST") != nil {
        for t in FuzzTarget.all { print(t.name) }
        exit(0)
    }
    let argv0 = argv.pointee?.pointee.map { String(cString: $0) } ?? "tapemu-fuzz"
    let name = harnessName(argv0)
    guard let target = FuzzTarget.named(name) else {
        fail("no harness '\(name)' (run as fuzz-<harness> or set TAPEMU_FUZZ_TARGET): "
             + FuzzTarget.all.map(\.name).joined(separator: ", "))
    }
    selected = target
    // `scripts/dev fuzz --seeds`: write this harness's seeds and stop.
    if let dir = getenv("TAPEMU_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }),
       let root = getenv("TAPEMU_FUZZ_REPOSITORY").map({ String(cString: $0) }) {
        for seed in FuzzSeeds.make(for: name, repository: root) {
            let path = "\(dir)/seed-\(seed.name)"
            guard let f = fopen(path, "wb") else { fail("cannot write \(path)") }
            _ = seed.bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, f) }
            fclose(f)
        }
        exit(0)
    }
    return 0
}

/// Runs an asynchronous harness to its end on the calling thread: its task prefers this
/// executor, whose jobs are run here, one by one, until the harness is done. So no other thread
/// is involved, and nothing the harness allocated (its task included) is freed after the input
/// returns — which libFuzzer would take for a leak to look for, at every input.
final class CallingThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    private let available = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        available.signal()
    }

    /// What the harness's task leaves for the thread that waits for it (both the same thread).
    final class Outcome: @unchecked Sendable {
        var done = false
        var failure: FuzzFailure?
    }

    func run(_ target: FuzzTarget, _ input: [UInt8]) -> FuzzFailure? {
        let outcome = Outcome()
        let task = Task(executorPreference: self) {
            do throws(FuzzFailure) { try await target.run(input) } catch { outcome.failure = error }
            outcome.done = true
        }
        repeat {
            available.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(on: asUnownedTaskExecutor())
        } while !(outcome.done && jobs.withLock { $0.isEmpty })
        withExtendedLifetime(task) {}
        return outcome.failure
    }
}

let executor = CallingThreadExecutor()

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let target = selected else { fail("LLVMFuzzerInitialize did not run") }
    let input = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    var failure: FuzzFailure?
    if let body = target.synchronousBody {
        do { try body(input) } catch { failure = error }
    } else {
        failure = executor.run(target, input)
    }
    if let failure {
        printError("\(target.name): \(failure)")
        abort()   // a crash, so libFuzzer keeps the input
    }
    return 0
}
