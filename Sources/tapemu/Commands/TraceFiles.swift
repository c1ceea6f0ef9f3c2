import APDUTrace
import Timing
import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

/// Reading traces for commands, with the exit statuses of the CLI.
enum TraceFiles {
    static func load(_ path: String) throws -> APDUTrace {
        do {
            return try APDUTrace(contentsOfFile: path)
        } catch {
            throw error.code == .unreadable ? CommandFailure.unreadable(path, "\(error)") : CommandFailure.dataError("\(error)")
        }
    }
}
