import BERTLV
import CardChannel
@testable import EMVKernel
import ISO7816
import Synchronization
import Testing
import TestSupport

// Helpers shared by the kernel tests: hand-built card answers, a fixed environment, and a
// scripted channel.

/// Bytes from hex written in the test; bad hex in a test is the test's own bug.
func bytes(_ hex: String) -> [UInt8] {
    do { return try Hex.decode(hex) } catch { preconditionFailure("bad hex in a test: \(hex)") }
}

func tlv(_ tag: UInt32, _ valueHex: String) -> TLV { TLV(tag: Tag(tag), value: bytes(valueHex)) }
func tlv(_ tag: UInt32, text: String) -> TLV { TLV(tag: Tag(tag), value: Array(text.utf8)) }
func tlv(_ tag: UInt32, _ children: TLV...) -> TLV { TLV(tag: Tag(tag), children: children) }

/// A 9000 answer holding `objects`.
func ok(_ objects: TLV...) -> ResponseAPDU { ResponseAPDU(data: objects.encoded, statusWord: .success) }
/// An answer of raw data hex and 9000.
func ok(raw hex: String) -> ResponseAPDU { ResponseAPDU(data: bytes(hex), statusWord: .success) }
/// A bare status word.
func status(_ sw: UInt16) -> ResponseAPDU { ResponseAPDU(statusWord: StatusWord(sw)) }

let testDate = TransactionDateTime(year: 2026, month: 11, day: 30, hour: 10, minute: 15, second: 30)
let testUN: UInt32 = 0x1234_5678
let testEnvironment = KernelEnvironment(now: { testDate }, unpredictableNumber: { testUN })

func makeKernel(amount: UInt64 = 1250, configuration: TerminalConfiguration = .default) -> EMVKernel {
    EMVKernel(configuration: configuration, transaction: Transaction(amount: amount), dateTime: testDate,
              unpredictableNumber: testUN)
}

extension EMVKernel.Action {
    var command: CommandAPDU? { if case .send(let c) = self { return c }; return nil }
    var failure: KernelError? { if case .fail(let e) = self { return e }; return nil }
    var read: CardRead? { if case .complete(let r) = self { return r }; return nil }
    var onlineData: PartialCardRead? { if case .onlineDataReady(let p) = self { return p }; return nil }
}

extension CommandAPDU {
    var hex: String { Hex.encode(bytes) }
}

/// Hand-built answers of typical cards.
enum Card {
    static let visaAID = "A0000000031010"
    static let visaDebitAID = "A0000000032010"
    static let mastercardAID = "A0000000041010"

    static func ppse(_ entries: TLV...) -> ResponseAPDU {
        ok(tlv(0x6F, tlv(0x84, text: "2PAY.SYS.DDF01"), tlv(0xA5, TLV(tag: 0xBF0C, children: entries))))
    }

    static func entry(_ aid: String, label: String, priority: String? = nil, kernel: String? = nil) -> TLV {
        var c = [tlv(0x4F, aid), tlv(0x50, text: label)]
        if let priority { c.append(tlv(0x87, priority)) }
        if let kernel { c.append(tlv(0x9F2A, kernel)) }
        return TLV(tag: 0x61, children: c)
    }

    static func fci(_ aid: String, label: String = "VISA CREDIT", priority: String? = "01", pdol: String? = nil) -> ResponseAPDU {
        var a5 = [tlv(0x50, text: label)]
        if let priority { a5.append(tlv(0x87, priority)) }
        if let pdol { a5.append(tlv(0x9F38, pdol)) }
        return ok(tlv(0x6F, tlv(0x84, aid), TLV(tag: 0xA5, children: a5)))
    }

    static let visaPDOL = "9F66049F02069F37045F2A029A03"
    static let visaPAN = "4761739001010010"
    static let visaTrack2 = "4761739001010010D28122011000012345"
    static let visaAC = "1122334455667788"

    /// A qVSDC GPO answer: format 2 with track 2 and an ARQC.
    static func visaGPO(cid: String = "80", afl: String = "18010100", ctq: String = "0000") -> ResponseAPDU {
        ok(tlv(0x77,
               tlv(0x82, "0000"), tlv(0x94, afl), tlv(0x57, visaTrack2),
               tlv(0x5F34, "01"), tlv(0x9F10, "06011203A00000"),
               tlv(0x9F26, visaAC), tlv(0x9F27, cid), tlv(0x9F36, "002A"),
               tlv(0x9F6C, ctq)))
    }

    static let visaRecord = ok(tlv(0x70,
        tlv(0x5F20, text: "VISA TEST/CARD"), tlv(0x5A, visaPAN),
        tlv(0x5F24, "281231")))

    static let mastercardPAN = "5413330089010434"
    static let mastercardCDOL1 = "9F02069F03069F1A0295055F2A029A039C019F37049F3403"
    /// M/Chip: format 1 GPO, AIP 1880, records 1 of SFI 1 and 1-2 of SFI 2.
    static let mchipGPO = ok(raw: "800A18800801010010010200")
    static let mchipRecord1 = ok(tlv(0x70,
        tlv(0x57, "5413330089010434D28122011000012345"),
        tlv(0x5F20, text: "MASTERCARD TEST/CARD")))
    static let mchipRecord2 = ok(tlv(0x70,
        tlv(0x5A, mastercardPAN), tlv(0x5F24, "281231"), tlv(0x5F34, "01"),
        tlv(0x8C, mastercardCDOL1)))
    static let mchipRecord3 = ok(tlv(0x70,
        tlv(0x8E, "000000000000000042031E031F03"), tlv(0x9F42, "0978")))
    static func mchipGenerateAC(cid: String = "80") -> ResponseAPDU {
        ok(tlv(0x77,
               tlv(0x9F27, cid), tlv(0x9F36, "0008"),
               tlv(0x9F26, "A1B2C3D4E5F60718"), tlv(0x9F10, "0110A00003220000")))
    }
}

/// Drives a kernel through `responses` from start, resuming at the online data point; returns
/// every command sent and the last action.
func run(_ kernel: inout EMVKernel, _ responses: [ResponseAPDU]) -> (commands: [CommandAPDU], last: EMVKernel.Action) {
    var commands: [CommandAPDU] = []
    var action = kernel.start()
    var queue = responses[...]
    while true {
        switch action {
        case .send(let c):
            commands.append(c)
            guard let r = queue.popFirst() else { return (commands, action) }
            action = kernel.receive(r)
        case .onlineDataReady:
            action = kernel.resume()
        case .complete, .fail:
            return (commands, action)
        }
    }
}

