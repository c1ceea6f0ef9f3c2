import BERTLV
import EMVKernel
import ISO7816
import Testing

/// A READ RECORD answer that fails the read leaves the partial read as it was before that
/// record: no object of the failing record, its step still the one in flight.
@Suite("A failing record leaves the partial read as it was")
struct RecordFailureTests {
    /// A Visa read with records 1 and 2 of SFI 3, resumed after the online data point.
    func resumedRead() -> EMVKernel {
        var k = makeKernel()
        _ = k.start()
        _ = k.receive(Card.ppse(Card.entry(Card.visaAID, label: "VISA")))
        _ = k.receive(Card.fci(Card.visaAID, pdol: Card.visaPDOL))
        _ = k.receive(Card.visaGPO(afl: "18010200"))
        _ = k.resume()
        return k
    }

    @Test func aRecordThatContradictsTheGPOAnswerHalfWay() throws {
        var k = resumedRead()
        let before = k.partial
        // The name is new; the AIP contradicts the GPO answer's 0000.
        let failure = try #require(k.receive(ok(tlv(0x70, tlv(0x5F20, text: "VISA TEST/CARD"), tlv(0x82, "1111")))).failure)
        #expect(failure.code == .inconsistentData)
        #expect(failure.partial == before)
        #expect(failure.partial?.card?.cardholderName == nil)
        #expect(failure.partial?.step == .readRecord(record: 1, sfi: 3))
    }

    @Test func aRefusedSecondRecord() throws {
        var k = resumedRead()
        _ = k.receive(ok(tlv(0x70, tlv(0x5F20, text: "VISA TEST/CARD"))))
        let before = k.partial
        let failure = try #require(k.receive(ResponseAPDU(data: [], statusWord: .recordNotFound)).failure)
        #expect(failure.partial == before)
        #expect(failure.partial?.card?.cardholderName == "VISA TEST/CARD")
        #expect(failure.partial?.step == .readRecord(record: 2, sfi: 3))
    }

    @Test func aLastRecordWhoseCardDataDoNotAgree() throws {
        var k = resumedRead()
        _ = k.receive(ok(tlv(0x70, tlv(0x5F20, text: "VISA TEST/CARD"))))
        let before = k.partial
        // A PAN other than track 2's: the card data check after the last record fails.
        let failure = try #require(k.receive(ok(tlv(0x70, tlv(0x5A, "4111111111111111")))).failure)
        #expect(failure.code == .inconsistentData)
        #expect(failure.partial == before)
        #expect(failure.partial?.step == .readRecord(record: 2, sfi: 3))
    }
}
