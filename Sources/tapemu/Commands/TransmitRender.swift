import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import Foundation
import ISO7816
import PCSC

/// How `transmit` shows its session: text for people, bytes only (--raw), or one JSON document.
/// PANs are masked in all three: each one the card has shown so far is masked wherever it
/// appears afterwards, TLV or not.
final class TransmitRender {
    enum Mode { case text, raw, json }

    let mode: Mode
    let console: Console
    let autoResponse: Bool
    private var pans: [PAN] = []
    private var header: [String: JSONValue] = [:]
    private var steps: [JSONValue] = []

    init(mode: Mode, console: Console, autoResponse: Bool) {
        self.mode = mode
        self.console = console
        self.autoResponse = autoResponse
    }

    func start(source: String, atr: [UInt8]) {
        let what = ReaderATR(atr)
        switch mode {
        case .text:
            console.print("Card: \(source)  ATR \(Hex.encode(atr)) — \(what)")
        case .raw:
            console.printError("tapemu: \(source), ATR \(Hex.encode(atr)) — \(what)")
        case .json:
            header = ["source": .string(source), "atr": .string(Hex.encode(atr)), "card": .string(what.description),
                      "autoResponse": .bool(autoResponse)]
        }
    }

    func exchange(_ command: CommandAPDU, _ response: ResponseAPDU, wire: [Exchange], line: Int) {
        for p in SensitiveData.pans(inTLV: response.data) where !pans.contains(p) { pans.append(p) }
        let micros = wire.reduce(Int64(0)) { $0 + $1.micros }
        switch mode {
        case .raw:
            console.print(hex(response))
        case .text:
            console.print("> \(hex(command))  \(APDUExplainer.summary(command))")
            // The 61xx / 6Cxx dance, when there was one: each answer and the command that followed it.
            for (answer, next) in zip(wire, wire.dropFirst()) {
                if let r = answer.response { console.print("  < \(r.statusWord.hex)  \(r.statusWord.name)") }
                console.print("  > \(hex(next.command))  \(APDUExplainer.summary(next.command))")
            }
            console.print("< \(hex(response))")
            console.print("  \(response.statusWord.hex) \(response.statusWord.name)  (\(Self.milliseconds(micros)) ms)")
            if !response.data.isEmpty {
                switch APDUExplainer.parseData(response.data) {
                case .success(let tlv): console.write(TLVRender.text(tlv, indent: 1))
                case .failure(let error): console.print("  (not BER-TLV: \(error))")
                }
            }
        case .json:
            guard case .object(var step) = APDUExplainer.json(response) else { return }
            step["kind"] = nil
            step["line"] = .int(line)
            step["command"] = .string(hex(command))
            step["instruction"] = .string(APDUExplainer.summary(command))
            step["response"] = .string(hex(response))
            step["micros"] = .int(Int(micros))
            if wire.count > 1 {
                step["wire"] = .array(wire.map { x in
                    .object(["command": .string(hex(x.command)),
                             "response": x.response.map { .string(hex($0)) } ?? .null,
                             "micros": .int(Int(x.micros))])
                })
            }
            steps.append(.object(step))
        }
    }

    func reset(atr: [UInt8], line: Int) {
        switch mode {
        case .raw: console.print(Hex.encode(atr))
        case .text: console.print("> RESET\n< ATR \(Hex.encode(atr)) — \(ReaderATR(atr))")
        case .json: steps.append(.object(["line": .int(line), "reset": .bool(true), "atr": .string(Hex.encode(atr))]))
        }
    }

    /// A step that failed (`command` nil for a reset): shown, and with --json the document is
    /// printed now, with the error.
    func failed(_ command: CommandAPDU?, _ error: CardChannelError, line: Int) throws {
        switch mode {
        case .raw:
            break
        case .text:
            console.print(command.map { "> \(hex($0))  \(APDUExplainer.summary($0))" } ?? "> RESET")
            console.print("! \(error.code.name): \(error.reason)")
        case .json:
            var step: [String: JSONValue] = ["line": .int(line), "error": .string(error.code.name)]
            if let command {
                step["command"] = .string(hex(command))
                step["instruction"] = .string(APDUExplainer.summary(command))
            } else {
                step["reset"] = .bool(true)
            }
            steps.append(.object(step))
            var doc = header
            doc["steps"] = .array(steps)
            doc["completed"] = .bool(false)
            doc["error"] = .object(["code": .string(error.code.name), "message": .string(error.description), "line": .int(line)])
            try JSONOutput.print(JSONValue.object(doc), to: console)
        }
    }

    func finish() throws {
        guard mode == .json else { return }
        var doc = header
        doc["steps"] = .array(steps)
        doc["completed"] = .bool(true)
        try JSONOutput.print(JSONValue.object(doc), to: console)
    }

    /// A command as hex, PANs masked; a PIN block (VERIFY, CHANGE REFERENCE DATA) not at all.
    func hex(_ command: CommandAPDU) -> String {
        if APDUExplainer.isSecret(command) {
            return Hex.encode(command.bytes.prefix(4)) + " (PIN block hidden)"
        }
        return SensitiveData.displayHex(command, knownPANs: pans)
    }

    /// A response (data + SW1 SW2) as hex, PANs masked by the one policy (``Redaction``: by tag,
    /// and by content in TLV values and in data that is not TLV).
    func hex(_ response: ResponseAPDU) -> String {
        SensitiveData.displayHex(response, knownPANs: pans)
    }

    /// `0.4`, `150.2`: milliseconds with one decimal.
    static func milliseconds(_ micros: Int64) -> String {
        "\(micros / 1000).\((micros % 1000) / 100)"
    }
}
