import EMVKernel
import Foundation

/// `--ca-keys FILE` and `--crl FILE` (`read`, `replay`): what offline data authentication trusts
/// and refuses, beside the built-in CA keys (the schemes' published keys and tapemu's test CA).
struct ODAOptions: Sendable {
    static let caKeys = Option<String>(
        "--ca-keys", value: "<file>",
        help: "More CA public keys for offline data authentication, one `RID INDEX EXPONENT EXPIRY MODULUS SHA1 [LABEL]` a line (hex; EXPIRY YYMMDD or -; SHA1 the key's check value); a key with a built-in's RID and index replaces it.")
    static let crl = Option<String>(
        "--crl", value: "<file>",
        help: "A certificate revocation list, one `RID INDEX SERIAL` a line (hex): an issuer certificate it names fails offline data authentication.")
    static let methods = Option<String>(
        "--oda-methods", value: "<list>",
        help: "The offline data authentication methods the terminal supports (terminal capabilities 9F33 byte 3), comma-separated from SDA, DDA, CDA, or none; default CDA, as a contactless reader (fDDA goes by the card's GPO answer). DDA,CDA runs DDA on a card without CDA.")
    static let arguments: [any CommandArgument] = [caKeys, crl, methods]

    var caKeys: String?
    var crl: String?
    /// 9F33 byte 3's ODA bits (SDA 80, DDA 40, CDA 08), when given.
    var methodBits: UInt8?

    init(arguments: inout Arguments) throws(UsageError) {
        caKeys = try arguments.value(Self.caKeys)
        crl = try arguments.value(Self.crl)
        if let text = try arguments.value(Self.methods) {
            methodBits = try Self.bits(text)
        }
    }

    /// The bits of `SDA,DDA,CDA` (any of them, in any order, or `none`).
    static func bits(_ text: String) throws(UsageError) -> UInt8 {
        if text == "none" { return 0 }
        var bits: UInt8 = 0
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            switch name {
            case "SDA": bits |= 0x80
            case "DDA": bits |= 0x40
            case "CDA": bits |= 0x08
            default: throw UsageError("--oda-methods is a comma-separated list of SDA, DDA and CDA, or none; not '\(text)'")
            }
        }
        return bits
    }

    /// `configuration` with the files' keys and revocations (exit 66 for a file that is not
    /// there, 65 for one that does not parse, naming the line).
    func apply(to configuration: TerminalConfiguration) throws(CommandFailure) -> TerminalConfiguration {
        var c = configuration
        if let methodBits { c.terminalCapabilities[2] = c.terminalCapabilities[2] & ~0xC8 | methodBits }
        if let caKeys {
            let text = try Self.read(caKeys, option: "--ca-keys")
            do { c.caPublicKeys = c.caPublicKeys.merging(try CAPublicKeyList.parse(text)) } catch {
                throw .dataError("--ca-keys \(caKeys): \(error)")
            }
        }
        if let crl {
            let text = try Self.read(crl, option: "--crl")
            do { c.revocationList = try CertificateRevocationList.parse(text) } catch {
                throw .dataError("--crl \(crl): \(error)")
            }
        }
        return c
    }

    private static func read(_ path: String, option: String) throws(CommandFailure) -> String {
        guard FileManager.default.fileExists(atPath: path) else { throw .noInput("\(option) \(path): no such file") }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw .dataError("\(option) \(path): not readable UTF-8 text")
        }
        return text
    }
}
