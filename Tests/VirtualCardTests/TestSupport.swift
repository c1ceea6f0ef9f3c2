import BERTLV
import struct BERTLV.Tag
import ISO7816
import Testing
import VirtualCard
import TestSupport

/// The transaction the tests' terminal runs: the values it fills DOLs with.
struct TerminalData {
    var amount: UInt64 = 1234
    var unpredictableNumber: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF]
    var cvmRequired = false

    var values: [Tag: [UInt8]] {
        var v: [Tag: [UInt8]] = [:]
        v[.terminalTransactionQualifiers] = [0x36, cvmRequired ? 0x40 : 0x00, 0x40, 0x00]
        v[.amountAuthorised] = BCD.encodeNumeric(amount, length: 6)
        v[.amountOther] = BCD.encodeNumeric(0, length: 6)
        v[.terminalCountryCode] = [0x07, 0x24]
        v[.terminalVerificationResults] = [0, 0, 0, 0, 0]
        v[.transactionCurrencyCode] = [0x09, 0x78]
        v[.transactionDate] = [0x26, 0x11, 0x30]
        v[.transactionType] = [0x00]
        v[.unpredictableNumber] = unpredictableNumber
        v[.terminalType] = [0x22]
        v[.cvmResults] = [0x1F, 0x03, 0x02]
        return v
    }

    func dolData(_ dol: [UInt8]) throws -> [UInt8] {
        let list = try DataObjectList(bytes: dol)
        let v = values
        return list.build { v[$0] }
    }
}

/// Talks to an emulated card the way a terminal does.
struct Terminal {
    let card: EmulatedCard

    init(_ profile: CardProfile) {
        card = EmulatedCard(profile: profile)
        card.powerOn()
    }

    /// Sends one command; the card must answer.
    func send(_ command: CommandAPDU) throws -> ResponseAPDU {
        try send(bytes: command.bytes)
    }

    func send(bytes: [UInt8]) throws -> ResponseAPDU {
        let reply = card.process(bytes)
        let raw = try #require(reply.responseBytes, "the card did not answer: \(reply)")
        return try ResponseAPDU(bytes: raw)
    }

    /// Sends a command and follows 61xx / 6Cxx as a channel does.
    func exchange(_ command: CommandAPDU) throws -> ResponseAPDU {
        var response = try send(command)
        var data: [UInt8] = []
        for _ in 0..<10 {
            if response.statusWord.isWrongLeWithExact {
                response = try send(command.withExpectedLength(response.sw2 == 0 ? 256 : Int(response.sw2)))
            } else if response.statusWord.isMoreDataAvailable {
                data += response.data
                response = try send(.getResponse(response.sw2))
            } else {
                break
            }
        }
        return ResponseAPDU(data: data + response.data, statusWord: response.statusWord)
    }

    func gpo(_ app: CardApplication, _ terminal: TerminalData = TerminalData()) throws -> ResponseAPDU {
        try exchange(.getProcessingOptions(pdolData: terminal.dolData(app.pdol)))
    }
}

extension ResponseAPDU {
    /// The data parsed as TLV (the test fails on bad TLV).
    func tlv() throws -> [TLV] { try BERTLV.parse(data) }
}


func hex(_ text: String) -> [UInt8] { (try? Hex.decode(text)) ?? [] }

extension CardProfile {
    /// The profile without tear or mute, so a whole transaction runs, as its card answers it
    /// (personalised for offline data authentication).
    var answering: CardProfile {
        var p = personalisedForODA()
        p.behaviour.tearAfterExchange = nil
        p.behaviour.muteAtExchange = nil
        return p
    }
}
