import COpenSSL

extension Crypto {
    /// SHA-1 of `data` (20 bytes): the hash EMV Book 2 uses for certificates and signatures.
    public static func sha1(_ data: some Collection<UInt8>) -> [UInt8] {
        let input = Array(data)
        var out = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = withNonNullBytes(input) { p, n in
            out.withUnsafeMutableBufferPointer { o in EVP_Digest(p, n, o.baseAddress, &length, EVP_sha1(), nil) }
        }
        check(ok == 1 && length == 20, "EVP_Digest(SHA-1)")
        return out
    }

    /// The raw RSA operation `input ^ exponent mod modulus` (no padding), big-endian, as many bytes
    /// as the modulus: EMV Book 2's recovery function with a public exponent, and a card's
    /// signature with its private one. Nil when the modulus is empty, even or below 2, or when
    /// `input` is not shorter than it as a number (hostile card data: never a trap).
    public static func rsaRaw(_ input: some Collection<UInt8>, exponent: some Collection<UInt8>,
                              modulus: some Collection<UInt8>) -> [UInt8]? {
        let x = Array(input), e = Array(exponent), n = Array(modulus)
        guard !n.isEmpty, !e.isEmpty, n.last! & 1 == 1, x.count <= n.count else { return nil }
        guard let ctx = BN_CTX_new() else { fatalError("BN_CTX_new failed") }
        defer { BN_CTX_free(ctx) }
        func bignum(_ bytes: [UInt8]) -> OpaquePointer {
            guard let b = bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
                fatalError("BN_bin2bn failed")
            }
            return b
        }
        let bx = bignum(x), be = bignum(e), bn = bignum(n)
        guard let r = BN_new() else { fatalError("BN_new failed") }
        defer { BN_free(bx); BN_free(be); BN_free(bn); BN_free(r) }
        guard BN_is_one(bn) == 0, BN_cmp(bx, bn) < 0 else { return nil }
        check(BN_mod_exp(r, bx, be, bn, ctx) == 1, "BN_mod_exp")
        var out = [UInt8](repeating: 0, count: n.count)
        let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(r, $0.baseAddress, Int32(n.count)) }
        check(written == Int32(n.count), "BN_bn2binpad")
        return out
    }
}
