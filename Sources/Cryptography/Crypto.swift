import COpenSSL

/// The cryptography tapemu needs, over OpenSSL's libcrypto (EVP, and its DES primitives for DES).
/// This is the only module that imports OpenSSL; the gateway uses these for webhook signatures
/// and cryptogram verification.
///
/// Keys of the wrong length are our own misuse and trap; an OpenSSL failure on valid input
/// cannot happen short of a broken library, and traps too.
public enum Crypto {
    // MARK: Hashes and HMAC

    /// SHA-256 of `data` (32 bytes).
    public static func sha256(_ data: some Collection<UInt8>) -> [UInt8] {
        let input = Array(data)
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = withNonNullBytes(input) { p, n in
            out.withUnsafeMutableBufferPointer { o in
                EVP_Digest(p, n, o.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        check(ok == 1 && length == 32, "EVP_Digest(SHA-256)")
        return out
    }

    /// HMAC-SHA256 of `message` under `key` (32 bytes). Any key length, empty included.
    public static func hmacSHA256(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        let k = Array(key), m = Array(message)
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = withNonNullBytes(k) { kp, kn in
            withNonNullBytes(m) { mp, mn in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha256(), kp, Int32(kn), mp.assumingMemoryBound(to: UInt8.self), mn, o.baseAddress, &length)
                }
            }
        }
        check(result != nil && length == 32, "HMAC(SHA-256)")
        return out
    }

    // MARK: Random and comparison

    /// `count` bytes from OpenSSL's cryptographically secure generator (RAND_bytes).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative random byte count")
        var out = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return out }
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        check(ok == 1, "RAND_bytes")
        return out
    }

    /// Compares in time that depends only on the lengths (CRYPTO_memcmp), for MACs and signatures.
    /// Different lengths compare unequal at once: a length is not a secret.
    public static func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        let x = Array(a), y = Array(b)
        guard x.count == y.count else { return false }
        guard !x.isEmpty else { return true }
        return x.withUnsafeBytes { xp in
            y.withUnsafeBytes { yp in CRYPTO_memcmp(xp.baseAddress, yp.baseAddress, x.count) == 0 }
        }
    }

    // MARK: Block ciphers (ECB, no padding: whole blocks in, whole blocks out)

    /// Triple DES (EDE) in ECB mode. `key`: 16 bytes (double length, K1 K2 K1) or 24 bytes;
    /// `data`: a multiple of 8 bytes.
    public static func tripleDES(encrypt: Bool, key: some Collection<UInt8>, data: some Collection<UInt8>) -> [UInt8] {
        let k = Array(key)
        precondition(k.count == 16 || k.count == 24, "a triple-DES key has 16 or 24 bytes, not \(k.count)")
        var k1 = DESKey(k, at: 0), k2 = DESKey(k, at: 8), k3 = k.count == 24 ? DESKey(k, at: 16) : k1
        return eachBlock(of: Array(data)) { input, output in
            DES_ecb3_encrypt(input, output, &k1.schedule, &k2.schedule, &k3.schedule, encrypt ? DES_ENCRYPT : DES_DECRYPT)
        }
    }

    /// Single DES in ECB mode. `key`: 8 bytes; `data`: a multiple of 8 bytes.
    public static func des(encrypt: Bool, key: some Collection<UInt8>, data: some Collection<UInt8>) -> [UInt8] {
        let k = Array(key)
        precondition(k.count == 8, "a DES key has 8 bytes, not \(k.count)")
        var k1 = DESKey(k, at: 0)
        return eachBlock(of: Array(data)) { input, output in
            DES_ecb_encrypt(input, output, &k1.schedule, encrypt ? DES_ENCRYPT : DES_DECRYPT)
        }
    }

    /// AES in ECB mode. `key`: 16, 24 or 32 bytes; `data`: a multiple of 16 bytes.
    public static func aes(encrypt: Bool, key: some Collection<UInt8>, data: some Collection<UInt8>) -> [UInt8] {
        let k = Array(key)
        let cipher: OpaquePointer?
        switch k.count {
        case 16: cipher = EVP_aes_128_ecb()
        case 24: cipher = EVP_aes_192_ecb()
        case 32: cipher = EVP_aes_256_ecb()
        default: preconditionFailure("an AES key has 16, 24 or 32 bytes, not \(k.count)")
        }
        return run(cipher, key: k, iv: nil, data: Array(data), blockSize: 16, encrypt: encrypt)
    }

    // MARK: MACs

    /// ISO/IEC 9797-1 padding method 2: `80`, then `00` up to a whole block (always adds a byte).
    public static func padISO9797Method2(_ data: some Collection<UInt8>, blockSize: Int = 8) -> [UInt8] {
        var out = Array(data)
        out.append(0x80)
        while out.count % blockSize != 0 { out.append(0) }
        return out
    }

    /// ISO/IEC 9797-1 MAC algorithm 3 (the "retail MAC") with DES and padding method 2, as EMV
    /// Book 2 Annex A1.2.1 uses it: CBC with the left key half, then the last block decrypted
    /// with the right half and encrypted with the left. `key`: 16 bytes. Returns 8 bytes.
    public static func retailMAC(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        let k = Array(key)
        precondition(k.count == 16, "the retail MAC takes a 16-byte key, not \(k.count)")
        var left = DESKey(k, at: 0), right = DESKey(k, at: 8)
        let padded = padISO9797Method2(message, blockSize: 8)
        // CBC with the left half over every block; DES_ncbc_encrypt leaves the last block in `h`.
        var h: DES_cblock = (0, 0, 0, 0, 0, 0, 0, 0)
        var scratch = [UInt8](repeating: 0, count: padded.count)
        padded.withUnsafeBufferPointer { p in
            scratch.withUnsafeMutableBufferPointer { s in
                DES_ncbc_encrypt(p.baseAddress, s.baseAddress, padded.count, &left.schedule, &h, DES_ENCRYPT)
            }
        }
        // The last block decrypted with the right half, encrypted with the left.
        var t: DES_cblock = (0, 0, 0, 0, 0, 0, 0, 0), mac: DES_cblock = (0, 0, 0, 0, 0, 0, 0, 0)
        DES_ecb_encrypt(&h, &t, &right.schedule, DES_DECRYPT)
        DES_ecb_encrypt(&t, &mac, &left.schedule, DES_ENCRYPT)
        return [mac.0, mac.1, mac.2, mac.3, mac.4, mac.5, mac.6, mac.7]
    }

    /// AES-CMAC (NIST SP 800-38B, RFC 4493). Returns 16 bytes.
    public static func aesCMAC(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        let k = Array(key), m = Array(message)
        func double(_ b: [UInt8]) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 16)
            var carry: UInt8 = 0
            for i in stride(from: 15, through: 0, by: -1) {
                out[i] = b[i] << 1 | carry
                carry = b[i] >> 7
            }
            if carry == 1 { out[15] ^= 0x87 }
            return out
        }
        let l = aes(encrypt: true, key: k, data: [UInt8](repeating: 0, count: 16))
        let k1 = double(l), k2 = double(k1)
        let blocks = max(1, (m.count + 15) / 16)
        let complete = !m.isEmpty && m.count % 16 == 0
        var last = Array(m[((blocks - 1) * 16)...])
        if complete {
            for i in 0..<16 { last[i] ^= k1[i] }
        } else {
            last.append(0x80)
            while last.count < 16 { last.append(0) }
            for i in 0..<16 { last[i] ^= k2[i] }
        }
        var x = [UInt8](repeating: 0, count: 16)
        for b in 0..<(blocks - 1) {
            for i in 0..<16 { x[i] ^= m[b * 16 + i] }
            x = aes(encrypt: true, key: k, data: x)
        }
        for i in 0..<16 { x[i] ^= last[i] }
        return aes(encrypt: true, key: k, data: x)
    }

    /// Sets each byte's lowest bit so the byte has odd parity, as DES keys do.
    public static func withOddParity(_ key: some Collection<UInt8>) -> [UInt8] {
        key.map { b in
            let high = b & 0xFE
            return high.nonzeroBitCount % 2 == 0 ? high | 1 : high
        }
    }

    // MARK: Internals

    /// One DES key's schedule (OpenSSL's DES primitives: single DES is not in the default
    /// provider's EVP ciphers, and triple DES with three equal keys does the work three times).
    private struct DESKey {
        var schedule = DES_key_schedule()

        /// The key of the 8 bytes of `key` from `offset`.
        init(_ key: [UInt8], at offset: Int) {
            var block: const_DES_cblock = (key[offset], key[offset + 1], key[offset + 2], key[offset + 3],
                                           key[offset + 4], key[offset + 5], key[offset + 6], key[offset + 7])
            DES_set_key_unchecked(&block, &schedule)
        }
    }

    /// `body` on each 8-byte block of `data` (a multiple of 8 bytes), input and output pointers.
    private static func eachBlock(
        of data: [UInt8], _ body: (UnsafeMutablePointer<const_DES_cblock>, UnsafeMutablePointer<DES_cblock>) -> Void
    ) -> [UInt8] {
        precondition(data.count % 8 == 0, "cipher data must be whole 8-byte blocks, not \(data.count) bytes")
        var input = data
        var out = [UInt8](repeating: 0, count: data.count)
        input.withUnsafeMutableBytes { i in
            out.withUnsafeMutableBytes { o in
                for offset in stride(from: 0, to: data.count, by: 8) {
                    body((i.baseAddress! + offset).assumingMemoryBound(to: const_DES_cblock.self),
                         (o.baseAddress! + offset).assumingMemoryBound(to: DES_cblock.self))
                }
            }
        }
        return out
    }

    private static func run(_ cipher: OpaquePointer?, key: [UInt8], iv: [UInt8]?, data: [UInt8],
                            blockSize: Int, encrypt: Bool) -> [UInt8] {
        precondition(data.count % blockSize == 0, "cipher data must be whole \(blockSize)-byte blocks, not \(data.count) bytes")
        guard !data.isEmpty else { return [] }
        guard let ctx = EVP_CIPHER_CTX_new() else { fatalError("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: data.count + blockSize)
        var produced: Int32 = 0, final: Int32 = 0
        let ok: Bool = key.withUnsafeBufferPointer { kp in
            let initialised = iv.map { iv in
                iv.withUnsafeBufferPointer { EVP_CipherInit_ex(ctx, cipher, nil, kp.baseAddress, $0.baseAddress, encrypt ? 1 : 0) }
            } ?? EVP_CipherInit_ex(ctx, cipher, nil, kp.baseAddress, nil, encrypt ? 1 : 0)
            guard initialised == 1,
                  EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 else { return false }
            return data.withUnsafeBufferPointer { dp in
                out.withUnsafeMutableBufferPointer { op in
                    guard EVP_CipherUpdate(ctx, op.baseAddress, &produced, dp.baseAddress, Int32(dp.count)) == 1 else {
                        return false
                    }
                    return EVP_CipherFinal_ex(ctx, op.baseAddress! + Int(produced), &final) == 1
                }
            }
        }
        check(ok && Int(produced + final) == data.count, "EVP cipher")
        out.removeLast(out.count - data.count)
        return out
    }

    /// Calls `body` with a non-null pointer even for empty input (some OpenSSL calls reject NULL).
    static func withNonNullBytes<R>(_ bytes: [UInt8], _ body: (UnsafeRawPointer, Int) -> R) -> R {
        if bytes.isEmpty {
            var zero: UInt8 = 0
            return withUnsafePointer(to: &zero) { body(UnsafeRawPointer($0), 0) }
        }
        return bytes.withUnsafeBytes { body($0.baseAddress!, $0.count) }
    }

    static func check(_ ok: Bool, _ what: String) {
        if !ok {
            let code = ERR_get_error()
            fatalError("OpenSSL \(what) failed (error \(code))")
        }
    }
}
