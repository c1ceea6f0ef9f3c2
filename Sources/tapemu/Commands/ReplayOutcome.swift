import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816

/// A one-line, PAN-free summary of how a read ended: what `read --record` writes as `@outcome`
/// and `replay` compares. Everything in it comes from the card's responses, so a replay of the
/// same (even redacted) trace gives the same line.
enum ReplayOutcome {
    static func summary(_ read: CardRead) -> String {
        "read \(read.application.brand.rawValue) \(read.cryptogram.kind.rawValue) atc \(read.cryptogram.atc) "
            + "ac \(Hex.encode(read.cryptogram.ac)) cvm \(read.cvm.rawValue)"
    }

    static func summary(_ error: KernelError) -> String {
        var s = "error \(error.code.name)"
        if let c = error.channelError { s += "(\(c.code.name))" }
        if let sw = error.statusWord { s += " sw \(sw.hex)" }
        return s + " at \(error.step)"
    }
}
