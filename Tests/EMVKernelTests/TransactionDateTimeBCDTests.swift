import EMVKernel
import Testing

/// 9A and 9F21 read back from bytes a trace recorded (outside input): a date and time, or nil —
/// never a trap on a month 13 or a nibble that is not a digit.
@Suite("TransactionDateTime from 9A / 9F21")
struct TransactionDateTimeBCDTests {
    @Test func validDateAndTime() throws {
        let d = try #require(TransactionDateTime(dateBCD: [0x26, 0x11, 0x30], timeBCD: [0x23, 0x59, 0x07]))
        #expect(d == TransactionDateTime(year: 2026, month: 11, day: 30, hour: 23, minute: 59, second: 7))
        #expect(d.dateBCD == [0x26, 0x11, 0x30])
        #expect(d.timeBCD == [0x23, 0x59, 0x07])
        #expect(TransactionDateTime(dateBCD: [0x26, 0x01, 0x02], timeBCD: nil)
                == TransactionDateTime(year: 2026, month: 1, day: 2))
    }

    @Test("not a date or time: nil", arguments: [
        ([0x26, 0x13, 0x01], nil), ([0x26, 0x00, 0x01], nil), ([0x26, 0x01, 0x32], nil), ([0x26, 0x01, 0x00], nil),
        ([0x2A, 0x01, 0x01], nil), ([0x26, 0x01], nil), ([0x26, 0x01, 0x01, 0x01], nil),
        ([0x26, 0x01, 0x01], [0x24, 0x00, 0x00]), ([0x26, 0x01, 0x01], [0x12, 0x60, 0x00]),
        ([0x26, 0x01, 0x01], [0x12, 0x00, 0x61]), ([0x26, 0x01, 0x01], [0x12, 0x00]),
    ] as [([UInt8], [UInt8]?)])
    func rejected(_ date: [UInt8], _ time: [UInt8]?) {
        #expect(TransactionDateTime(dateBCD: date, timeBCD: time) == nil)
    }
}
