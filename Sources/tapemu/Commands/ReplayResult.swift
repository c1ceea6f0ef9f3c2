import APDUTrace
import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

/// One trace's replay.
struct ReplayResult: Sendable {
    var file: String
    var passed: Bool
    /// What the kernel ended with (`read visa ARQC …`, `error channelFailed(cardRemoved) at GPO`).
    var outcome: String?
    /// Why it failed, when it did: the divergence (with both commands) or the reason.
    var divergence: String?
    var played: Int
    var total: Int
    var mode: TraceMatchMode = .masked
    /// Offline data authentication's one line (`ODA fDDA with CA A000000003/E7: verified`).
    var oda: String?

    var summary: String {
        if passed { return "\(outcome ?? "") (\(played)/\(total) exchanges)" }
        return divergence.map { String($0.split(separator: "\n").first ?? "") } ?? "failed"
    }

    var json: JSONValue {
        .object([
            "file": .string(file), "passed": .bool(passed),
            "outcome": outcome.map(JSONValue.string) ?? .null,
            "divergence": divergence.map(JSONValue.string) ?? .null,
            "played": .int(played), "total": .int(total), "mode": .string(mode.rawValue),
            "oda": oda.map(JSONValue.string) ?? .null,
        ])
    }
}
