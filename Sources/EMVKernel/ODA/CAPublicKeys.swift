import BERTLV
import Cryptography
import ISO7816

/// A certification authority's public key as a terminal holds it (EMV Book 2 §11.2.2): the
/// registered application provider (RID) and the index (8F) name it.
public struct CAPublicKey: Hashable, Sendable {
    /// RID, 5 bytes.
    public var rid: [UInt8]
    /// CA public key index (8F).
    public var index: UInt8
    /// 3 or 65537, big-endian.
    public var exponent: [UInt8]
    public var modulus: [UInt8]
    /// YYMMDD, when known.
    public var expiry: String?
    /// What the key is (e.g. `Visa live 1984-bit`, `tapemu test CA`).
    public var label: String

    /// `A000000003/09`.
    public var name: String { "\(Hex.encode(rid))/\(Hex.encode([index]))" }

    /// The key's check value: SHA-1 of RID, index, modulus and exponent (Book 2 §11.2.2).
    public var checksum: [UInt8] { Crypto.sha1(rid + [index] + modulus + exponent) }
}

/// Why a CA key list or a revocation list could not be read: the file's line and the reason.
public struct ODADataError: Error, Hashable, Sendable, CustomStringConvertible {
    public var line: Int
    public var reason: String
    public var description: String { "line \(line): \(reason)" }
}

/// The CA public keys the terminal knows, by RID and index.
///
/// File format (UTF-8 text, `#` comments and blank lines ignored), one key a line:
/// `RID INDEX EXPONENT EXPIRY MODULUS SHA1 [LABEL…]` — hex fields, EXPIRY `YYMMDD` or `-`,
/// SHA1 the key's check value, which must match. A user file (`--ca-keys FILE`) adds keys and
/// replaces built-in ones with the same RID and index.
public struct CAPublicKeyList: Hashable, Sendable {
    public private(set) var keys: [CAPublicKey]

    public init(keys: [CAPublicKey] = []) { self.keys = keys }

    /// The schemes' published keys and tapemu's test CA (``builtInText``).
    public static let builtIn: CAPublicKeyList = {
        do { return try parse(builtInText) } catch { preconditionFailure("the built-in CA key list is broken: \(error)") }
    }()

    /// The built-in list as a `--ca-keys` file says it.
    public static var builtInFile: String { builtInText }

    public func key(rid: [UInt8], index: UInt8) -> CAPublicKey? {
        keys.first { $0.rid == rid && $0.index == index }
    }

    /// This list with `other`'s keys added, replacing keys with the same RID and index.
    public func merging(_ other: CAPublicKeyList) -> CAPublicKeyList {
        var out = keys.filter { k in !other.keys.contains { $0.rid == k.rid && $0.index == k.index } }
        out += other.keys
        return CAPublicKeyList(keys: out)
    }

    /// Reads a key file; every line's check value is verified.
    public static func parse(_ text: String) throws(ODADataError) -> CAPublicKeyList {
        var keys: [CAPublicKey] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = n + 1
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            guard fields.count >= 6 else {
                throw ODADataError(line: line, reason: "a key line has RID, index, exponent, expiry, modulus and SHA-1; found \(fields.count) field(s)")
            }
            func hex(_ i: Int, _ what: String) throws(ODADataError) -> [UInt8] {
                guard let b = try? Hex.decode(fields[i]) else {
                    throw ODADataError(line: line, reason: "the \(what) is not hex")
                }
                return b
            }
            let rid = try hex(0, "RID"), index = try hex(1, "index"), exponent = try hex(2, "exponent")
            let modulus = try hex(4, "modulus"), check = try hex(5, "SHA-1 check")
            guard rid.count == 5 else { throw ODADataError(line: line, reason: "the RID has \(rid.count) byte(s), not 5") }
            guard index.count == 1 else { throw ODADataError(line: line, reason: "the index has \(index.count) byte(s), not 1") }
            guard exponent == [0x03] || exponent == [0x01, 0x00, 0x01] else {
                throw ODADataError(line: line, reason: "the exponent is \(Hex.encode(exponent)); EMV allows 03 and 010001")
            }
            guard (64...248).contains(modulus.count), modulus.first != 0, modulus.last! & 1 == 1 else {
                throw ODADataError(line: line, reason: "the modulus has \(modulus.count) byte(s) or is even; EMV keys have 64 to 248, odd")
            }
            let expiryField = String(fields[3])
            var expiry: String?
            if expiryField != "-" {
                guard expiryField.count == 6, expiryField.allSatisfy(\.isNumber) else {
                    throw ODADataError(line: line, reason: "the expiry is \(expiryField), not YYMMDD or -")
                }
                expiry = expiryField
            }
            let key = CAPublicKey(rid: rid, index: index[0], exponent: exponent, modulus: modulus, expiry: expiry,
                                  label: fields.dropFirst(6).joined(separator: " "))
            guard check.count == 20, key.checksum == check else {
                throw ODADataError(line: line, reason: "key \(key.name): the SHA-1 check does not match the key")
            }
            guard !keys.contains(where: { $0.rid == key.rid && $0.index == key.index }) else {
                throw ODADataError(line: line, reason: "key \(key.name) is listed twice")
            }
            keys.append(key)
        }
        return CAPublicKeyList(keys: keys)
    }
}

/// Issuer certificates the terminal refuses: RID, CA key index and certificate serial number
/// (Book 2 §5.3 step 10, §6.3). File format: one `RID INDEX SERIAL` a line (hex; SERIAL 3 bytes),
/// `#` comments.
public struct CertificateRevocationList: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var rid: [UInt8]
        public var index: UInt8
        public var serial: [UInt8]
        public init(rid: [UInt8], index: UInt8, serial: [UInt8]) {
            self.rid = rid
            self.index = index
            self.serial = serial
        }
    }

    public var entries: Set<Entry>

    public init(entries: Set<Entry> = []) { self.entries = entries }

    public static let empty = CertificateRevocationList()

    public func contains(rid: [UInt8], index: UInt8, serial: [UInt8]) -> Bool {
        entries.contains(Entry(rid: rid, index: index, serial: serial))
    }

    public static func parse(_ text: String) throws(ODADataError) -> CertificateRevocationList {
        var entries: Set<Entry> = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            guard fields.count == 3, let rid = try? Hex.decode(fields[0]), rid.count == 5,
                  let index = try? Hex.decode(fields[1]), index.count == 1,
                  let serial = try? Hex.decode(fields[2]), serial.count == 3 else {
                throw ODADataError(line: n + 1, reason: "a revocation line is RID (5 bytes), CA index (1) and serial number (3), in hex")
            }
            entries.insert(Entry(rid: rid, index: index[0], serial: serial))
        }
        return CertificateRevocationList(entries: entries)
    }
}
