import CardChannel
import EMVKernel
import ISO7816
import VirtualCard
import BenchTiming

/// Full kernel reads against in-process virtual cards that spend no card time: what our own code
/// costs per tap. Also the kernel alone (canned responses) and the card alone, to show the split.
enum KernelBench {
    struct Result {
        var profile: String
        var reads: LatencyPercentiles
        var exchangesPerRead: Int
        /// The kernel state machine fed the recorded responses: no channel, no session.
        var kernelAlone: PerCall
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
                      kernelAlone: kernelAlone, cardAlone: cardAlone,
                      airFloor: ContactlessAirTime().read(sample.exchanges))
    }
}

struct BenchFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
