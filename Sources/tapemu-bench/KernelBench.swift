import CardChannel
import EMVKernel
import ISO7816
import VirtualCard
import BenchTiming
import Foundation

/// Full kernel reads against in-process virtual cards that spend no card time: what our own code
/// costs per tap. Also the kernel alone (canned responses) and the card alone, to show the split.
enum KernelBench {
    struct Result {
        var profile: String
        var reads: LatencyPercentiles
        var exchangesPerRead: Int
        /// The kernel state machine fed the recorded responses: no channel, no session.
        var kernelAlone: PerCall
        /// The same, with the caches evicted before each step (as pcscd, the card and the
        /// operating system leave them between two exchanges of a read through PC/SC): the median
        /// per read of the kernel's steps only, eviction not counted.
        var kernelCold: LatencyPercentiles
        /// The emulated card answering the read's commands: no kernel.
        var cardAlone: PerCall
        var airFloor: Duration
    }

    /// A card serves at most this many reads before a fresh one replaces it (its 2-byte ATC would
    /// run out at 65 535, and a real card refuses from then on).
    static let readsPerCard = 50_000

    static func run(profile name: String, reads: Int, warmup: Int, quick: Bool) async throws -> Result {
        guard let profile = CardProfiles.named(name) else { throw BenchFailure("no built-in profile \(name)") }
        let reader = EMVReader()
        let transaction = Transaction(amount: 1000)

        // One read to learn the exchanges.
        let sample = try await reader.read(channel: VirtualCardChannel(card: EmulatedCard(profile: profile),
                                                                       simulatesCardTime: false),
                                           transaction: transaction)
        let commands = sample.exchanges.map(\.command.bytes)
        let responses = sample.exchanges.compactMap(\.response)

        var card = EmulatedCard(profile: profile)
        var used = 0
        let samples = try await Harness.each(warmup: warmup, count: reads) { () async throws -> Int in
            used += 1
            if used == readsPerCard { card = EmulatedCard(profile: profile); used = 0 }
            let channel = VirtualCardChannel(card: card, simulatesCardTime: false)
            return try await reader.read(channel: channel, transaction: transaction).exchanges.count
        }

        let iterations = quick ? 1_000 : 5_000, runs = quick ? 5 : 11
        let fixed = KernelEnvironment.system
        let kernelAlone = Harness.batches(warmup: 200, runs: runs, iterations: iterations) { () -> Int in
            var kernel = EMVKernel(configuration: .default, transaction: transaction, environment: fixed)
            kernel.handsOutOnlineData = false   // as the reads above: nobody takes the online data
            var action = kernel.start()
            var i = 0
            while true {
                switch action {
                case .send:
                    guard i < responses.count else { return -1 }
                    action = kernel.receive(responses[i])
                    i += 1
                case .onlineDataReady: action = kernel.resume()
                case .complete(let read): return read.cryptogram.ac.count
                case .fail: return -1
                }
            }
        }
        let kernelCold = coldKernel(transaction: transaction, responses: responses, reads: quick ? 100 : 500)
        var alone = EmulatedCard(profile: profile)
        var aloneUsed = 0
        let cardAlone = Harness.batches(warmup: 200, runs: runs, iterations: iterations) { () -> Int in
            aloneUsed += 1
            if aloneUsed == readsPerCard { alone = EmulatedCard(profile: profile); aloneUsed = 0 }
            alone.powerOn()
            var n = 0
            for c in commands { n &+= alone.process(c).responseBytes?.count ?? 0 }
            return n
        }
        return Result(profile: name, reads: LatencyPercentiles(samples)!, exchangesPerRead: sample.exchanges.count,
                      kernelAlone: kernelAlone, kernelCold: kernelCold, cardAlone: cardAlone,
                      airFloor: ContactlessAirTime().read(sample.exchanges))
    }
}

extension KernelBench {
    /// Bytes touched before each kernel step: twice the largest last-level cache of the machines
    /// this ran on, so the kernel's code and data come from memory — the worst case of a read
    /// through PC/SC, where pcscd, the card and other tenants of the host run between two steps.
    /// `TAPEMU_BENCH_EVICT_MIB` sets another size.
    static let evictionBytes: Int = {
        if let text = ProcessInfo.processInfo.environment["TAPEMU_BENCH_EVICT_MIB"], let mib = Int(text), mib > 0 {
            return mib << 20
        }
        return 64 << 20
    }()

    /// Kernel reads fed the recorded `responses`, the caches evicted before each step; each
    /// sample is the sum of one read's steps (start, every receive and resume, the result).
    static func coldKernel(transaction: Transaction, responses: [ResponseAPDU], reads: Int) -> LatencyPercentiles {
        var evict = [UInt8](repeating: 1, count: evictionBytes)
        var sink = 0
        func thrash() {
            evict.withUnsafeMutableBufferPointer { p in
                var i = 0
                while i < p.count { p[i] &+= 1; i += 64 }
            }
        }
        let clock = Harness.clock, fixed = KernelEnvironment.system
        var samples: [Duration] = []
        samples.reserveCapacity(reads)
        for n in 0..<(reads + 20) {
            var spent = Duration.zero
            thrash()
            var start = clock.now
            var kernel = EMVKernel(configuration: .default, transaction: transaction, environment: fixed)
            kernel.handsOutOnlineData = false
            var action = kernel.start()
            spent += start.duration(to: clock.now)
            var i = 0
            loop: while true {
                switch consume action {
                case .send:
                    guard i < responses.count else { sink -= 1; break loop }
                    let response = responses[i]
                    i += 1
                    thrash()
                    start = clock.now
                    action = kernel.receive(response)
                    spent += start.duration(to: clock.now)
                case .onlineDataReady:
                    start = clock.now
                    action = kernel.resume()
                    spent += start.duration(to: clock.now)
                case .complete(let read):
                    start = clock.now
                    sink &+= read.cryptogram.ac.count
                    _ = consume read
                    spent += start.duration(to: clock.now)
                    break loop
                case .fail:
                    sink -= 1
                    break loop
                }
            }
            if n >= 20 { samples.append(spent) }
        }
        Sink.add(sink &+ Int(evict[0]))
        return LatencyPercentiles(samples)!
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
