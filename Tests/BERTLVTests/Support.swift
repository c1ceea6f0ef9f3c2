@testable import BERTLV
import TestSupport

/// Bytes from hex written in a test (spaces allowed). A typo traps: it is the test's own bug.
func bytes(_ hex: String) -> [UInt8] {
    let digits = hex.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd hex in a test")
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}

func hexString(_ b: some Sequence<UInt8>) -> String {
    b.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
}


/// Responses shaped exactly as a Visa contactless card sends them (data only, without SW1 SW2),
/// with the public test-range PAN 4761 7390 0101 0010 (Luhn-valid).
enum Fixtures {
    static let testPAN = "4761739001010010"

    /// SELECT PPSE response (FCI of 2PAY.SYS.DDF01 with one Visa directory entry).
    static let ppseFCI = bytes("""
        6F 2A 84 0E 325041592E5359532E4444463031
              A5 18 BF0C 15 61 13 4F 07 A0000000031010
                                  87 01 01
                                  9F0A 04 00010101
        """)

    /// SELECT AID response: FCI with the qVSDC PDOL.
    static let visaFCI = bytes("""
        6F 3D 84 07 A0000000031010
              A5 32 50 0B 56495341204352454449 54
                    87 01 01
                    9F38 18 9F66 04 9F02 06 9F03 06 9F1A 02 95 05 5F2A 02 9A 03 9C 01 9F37 04
                    5F2D 04 656E6672
        """)

    /// READ RECORD SFI 1 record 1 response (record template 70) of a Visa card.
    static let visaRecord = bytes("""
        70 81 CC
           57 13 4761739001010010 D2611201 1000012300000F
           5F20 0E 5649534120544553542F43415244
           9F1F 10 31303030303132333030303030303030
           5A 08 4761739001010010
           5F24 03 261130
           5F25 03 210101
           5F28 02 0840
           5F34 01 01
           9F07 02 FF00
           8E 0E 00000000 00000000 4203 1E03 1F00
           9F0D 05 F040642000
           9F0E 05 0010000000
           9F0F 05 F040649800
           9F4A 01 82
           8C 15 9F0206 9F0306 9F1A02 9505 5F2A02 9A03 9C01 9F3704
           8D 17 8A02 9F0206 9F0306 9F1A02 9505 5F2A02 9A03 9C01 9F3704
           9F08 02 0096
           5F30 02 0201
           9F42 02 0840
           9F44 01 02
        """)

    /// GET PROCESSING OPTIONS response, format 2 (qVSDC online: ARQC with track 2 and IAD).
    static let visaGPOFormat2 = bytes("""
        77 65
           82 02 2000
           94 04 08010100
           57 13 4761739001010010 D2611201 1000012300000F
           5F34 01 01
           9F10 07 06011203A00000
           9F26 08 1122334455667788
           9F27 01 80
           9F36 02 0042
           9F6C 02 1600
           9F6E 04 20700000
           5F20 0E 5649534120544553542F43415244
           9F66 04 36000000
        """)

    /// The GPO command data a reader sends for the Visa PDOL above (in template 83):
    /// TTQ, amount 12.34, other 0, country 0724, TVR, currency 0978 (EUR), date, type, UN.
    static let gpoCommandData = bytes("""
        83 21 36000000 000000001234 000000000000 0724 0000000000 0978 261130 00 12345678
        """)

    /// Real captures (Apple Pay Visa, Proxmark3 trace `hf_visa_apple_normal.trace` in
    /// ../shared/real-traces): the SELECT PPSE and SELECT AID responses, which hold no card data.
    static let realPPSEFCI = bytes("""
        6F2A840E325041592E5359532E4444463031A518BF0C1561134F07A00000000310108701019F0A0400010101
        """)
    static let realVisaFCI = bytes("""
        6F428407A0000000031010A5379F381B9F66049F02069F03069F1A0295055F2A029A039C019F37049F4E14BF0C16
        9F5A053109780826BF6304DF2001809F0A0400010101
        """)

    static let all: [(name: String, bytes: [UInt8])] = [
        ("PPSE FCI", ppseFCI), ("Visa FCI", visaFCI), ("Visa record", visaRecord),
        ("Visa GPO format 2", visaGPOFormat2), ("GPO command data", gpoCommandData),
        ("real PPSE FCI", realPPSEFCI), ("real Visa FCI", realVisaFCI),
    ]
}
