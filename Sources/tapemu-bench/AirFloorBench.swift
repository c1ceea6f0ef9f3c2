import CardChannel
import EMVKernel
import VirtualCard
import BenchTiming

/// The on-air floor of one read of each built-in profile: what ISO 14443-A at 106 kbit/s needs
/// for its bytes (``ContactlessAirTime``), for comparison with the measured times.
enum AirFloorBench {
    struct Row {
        var profile: String
        var exchanges: Int
        var commandBytes: Int
        var responseBytes: Int
        var floor: Duration
        /// Why the read ended early, when it did (a torn or mute card).
        var ended: String?
    }

    static func run() async -> [Row] {
        var rows: [Row] = []
        for profile in CardProfiles.all {
            let channel = VirtualCardChannel(card: EmulatedCard(profile: profile), simulatesCardTime: false)
            let exchanges: [Exchange]
            var ended: String?
            do {
                exchanges = try await EMVReader().read(channel: channel, transaction: Transaction(amount: 1000),
                                                       apduTimeout: .milliseconds(50)).exchanges
            } catch {
                exchanges = error.partial?.exchanges ?? []
                ended = "\(error.code.name) at \(error.step)"
            }
            rows.append(Row(profile: profile.name, exchanges: exchanges.count,
                            commandBytes: exchanges.reduce(0) { $0 + $1.command.bytes.count },
                            responseBytes: exchanges.reduce(0) { $0 + ($1.response.map { $0.data.count + 2 } ?? 0) },
                            floor: ContactlessAirTime().read(exchanges), ended: ended))
        }
        return rows
    }
}
