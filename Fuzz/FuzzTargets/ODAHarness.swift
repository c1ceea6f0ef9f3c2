import EMVKernel

/// Offline data authentication's files: a `--ca-keys` key list and a `--crl` revocation list.
enum ODAHarness {
    /// The input as text: a key list (every accepted key's check value holds, merging it over the
    /// built-ins keeps one key per RID and index) and a revocation list.
    @Sendable static func odaData(_ input: [UInt8]) throws(FuzzFailure) {
        let text = String(decoding: input, as: UTF8.self)
        if let keys = try? CAPublicKeyList.parse(text) {
            for k in keys.keys {
                try expect(k.rid.count == 5 && (64...248).contains(k.modulus.count), "an accepted CA key has a bad RID or modulus")
            }
            let merged = CAPublicKeyList.builtIn.merging(keys)
            let names = merged.keys.map(\.name)
            try expect(Set(names).count == names.count, "merging CA keys left two keys with one RID and index")
        }
        if let crl = try? CertificateRevocationList.parse(text) {
            for e in crl.entries { try expect(e.rid.count == 5 && e.serial.count == 3, "an accepted revocation entry is malformed") }
        }
    }
}
