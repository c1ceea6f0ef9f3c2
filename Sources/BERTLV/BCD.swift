/// Binary-coded decimal as EMV writes numbers (n: right-justified; cn: left-justified, F-padded).
public enum BCD {
    /// The digits of BCD bytes. With `allowingTrailingF`, an `F` nibble ends the digits (cn).
    public static func digits(_ bytes: some Collection<UInt8>, allowingTrailingF: Bool = false) throws(TLVError) -> String {
        // The digits are written straight into the string's storage; the first bad nibble, in
        // order, is the error.
        var failure: TLVError?
        let text = String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            var count = 0, ended = false
            func take(_ nib: UInt8) -> Bool {
                if ended {
                    guard nib == 0xF else { failure = TLVError(.badValue, "a digit after the F padding"); return false }
                    return true
                }
                if nib <= 9 {
                    buffer[count] = 0x30 + nib
                    count += 1
                } else if nib == 0xF && allowingTrailingF {
                    ended = true
                } else {
                    failure = TLVError(.badValue, "nibble \(String(nib, radix: 16, uppercase: true)) is not a BCD digit")
                    return false
                }
                return true
            }
            for b in bytes {
                guard take(b >> 4), take(b & 0x0F) else { return 0 }
            }
            return count
        }
        if let failure { throw failure }
        return text
    }

    /// A number as n-format BCD of `length` bytes (right-justified, zero-padded).
    public static func encodeNumeric(_ value: UInt64, length: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var v = value
        var i = length - 1
        while i >= 0 {
            let lo = UInt8(v % 10); v /= 10
            let hi = UInt8(v % 10); v /= 10
            out[i] = hi << 4 | lo
            i -= 1
        }
        return out
    }

    /// Digits as n-format BCD of `length` bytes.
    public static func encodeNumeric(digits: String, length: Int) -> [UInt8] {
        if digits.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII: nibbles straight from the bytes (a non-digit counts as 0, as below).
            var nibbles = digits.utf8.map { (0x30...0x39).contains($0) ? $0 - 0x30 : 0 }
            if nibbles.count % 2 == 1 { nibbles.insert(0, at: 0) }
            var out: [UInt8] = []
            out.reserveCapacity(nibbles.count / 2)
            for i in stride(from: 0, to: nibbles.count, by: 2) { out.append(nibbles[i] << 4 | nibbles[i + 1]) }
            return DataObjectList.fit(out, to: length, format: .n)
        }
        var padded = digits
        if padded.count % 2 == 1 { padded = "0" + padded }
        var out: [UInt8] = []
        var it = padded.makeIterator()
        while let h = it.next(), let l = it.next() {
            out.append(UInt8(h.wholeNumberValue ?? 0) << 4 | UInt8(l.wholeNumberValue ?? 0))
        }
        return DataObjectList.fit(out, to: length, format: .n)
    }

    /// Digits as cn-format BCD (left-justified, F-padded to whole bytes).
    public static func encodeCompressed(_ digits: String) -> [UInt8] {
        var nibbles = digits.compactMap { $0.wholeNumberValue.map(UInt8.init) }
        if nibbles.count % 2 == 1 { nibbles.append(0xF) }
        var out: [UInt8] = []
        for i in stride(from: 0, to: nibbles.count, by: 2) { out.append(nibbles[i] << 4 | nibbles[i + 1]) }
        return out
    }

    /// The value of n-format BCD bytes, or nil if they are not BCD or overflow.
    public static func value(_ bytes: some Collection<UInt8>) -> UInt64? {
        numericValue(bytes)
    }

    /// ``value(_:)`` for an array (specialised here, not called generically from other modules).
    public static func value(_ bytes: [UInt8]) -> UInt64? {
        numericValue(bytes)
    }

    private static func numericValue<C: Collection<UInt8>>(_ bytes: C) -> UInt64? {
        var v: UInt64 = 0
        for b in bytes {
            let hi = b >> 4, lo = b & 0xF
            guard hi <= 9, lo <= 9 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 100)
            let (a, o2) = m.addingReportingOverflow(UInt64(hi * 10 + lo))
            guard !o1, !o2 else { return nil }
            v = a
        }
        return v
    }
}
