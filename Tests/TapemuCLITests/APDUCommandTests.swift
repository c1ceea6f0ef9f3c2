import BERTLV
import PaymentRules
import Testing
import TestSupport
@testable import tapemu

@Suite("tapemu apdu decode", .temporaryDirectories)
struct APDUCommandTests {
    // A READ RECORD answer whose template announces 2 bytes more than it holds: not BER-TLV,
    // so the PAN (5A) cannot be found by tag; it must not be printed whole anyway.
    static let brokenRecord = "70125A0847617390010100105F24032812319000"
    // The same with track 2 (57) cut short.
    static let brokenTrack2 = "701557114761739001010010D281220110000123459000"

    @Test("response data that is not BER-TLV never shows a full PAN",
          arguments: [brokenRecord, brokenTrack2], [true, false])
    func brokenResponseMasksPAN(hex: String, json: Bool) async {
        let r = await runCLI(["apdu", "decode", "--response", hex] + (json ? ["--json"] : []))
        #expect(r.status == 0)
        #expect(r.out.contains("not BER-TLV") || r.out.contains("tlvError"))
        #expect(!r.out.contains("4761739001010010"))
        #expect(r.out.contains("****"))
    }

    @Test("command data that is not TLV never shows a full PAN; GENERATE AC's CDOL data stays readable",
          arguments: [true, false])
    func commandData(json: Bool) async {
        for hex in ["80DA0000084761739001010010", "80DA00000A5A084761739001010010"] {   // raw, and as TLV 5A
            let put = await runCLI(["apdu", "decode", hex] + (json ? ["--json"] : []))
            #expect(put.status == 0)
            #expect(!put.out.contains("4761739001010010"))
            #expect(put.out.contains("476173******0010"))
        }
        let cdol = "0000000010000000000000000724800000800009782611300094B4FFF1"
        let generateAC = await runCLI(["apdu", "decode", "80AE80001D" + cdol + "00"] + (json ? ["--json"] : []))
        #expect(generateAC.status == 0)
        #expect(generateAC.out.contains(cdol))
    }

    @Test("short digit runs and non-digit hex are shown as they are")
    func maskingLeavesOtherBytes() {
        #expect(SensitiveData.maskedHex([0x6F, 0x0A]) == "6F0A")
        #expect(SensitiveData.maskedHex([0x5F, 0x24, 0x03, 0x28, 0x12, 0x31]) == "5F2403281231")
        #expect(SensitiveData.maskedHex([0x47, 0x61, 0x73, 0x90, 0x01, 0x01, 0x00, 0x10]) == "476173******0010")
    }
}
