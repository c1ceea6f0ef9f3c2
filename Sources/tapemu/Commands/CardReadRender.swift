import BERTLV
import PaymentRules
import CardChannel
import EMVKernel
import ISO7816

/// How a card read is shown: text for people, JSON for programs. The PAN only ever masked.
enum CardReadRender {
    /// The amount in the currency the kernel sent (`c`'s: a trace's own when reading one).
    static func amount(_ t: Transaction, _ c: TerminalConfiguration) -> String {
        let currency = ISOCodes.currency(Int(c.currencyCode))
        let exponent = currency?.exponent ?? Int(c.currencyExponent)
        var digits = String(t.amount)
        if exponent > 0 {
            while digits.count <= exponent { digits = "0" + digits }
            digits.insert(".", at: digits.index(digits.endIndex, offsetBy: -exponent))
        }
        return "\(digits) \(currency?.code ?? String(c.currencyCode))"
    }

    static func cvmText(_ cvm: CardholderVerification) -> String {
        switch cvm {
        case .noCVM: return "no CVM"
        case .onlinePIN: return "online PIN"
        case .signature: return "signature"
        case .consumerDevice: return "consumer device CVM"
        case .failed: return "CVM failed (none possible)"
        }
    }

    // MARK: Text

    static func text(_ read: CardRead, source: String, transaction: Transaction,
                     configuration: TerminalConfiguration) -> String {
        var s = summary(application: read.application, card: read.card, cryptogram: read.cryptogram, cvm: read.cvm,
                        cvmDecision: read.cvmDecision, oda: read.oda, source: source, transaction: transaction,
                        configuration: configuration)
        s += "\n" + table(read.exchanges, pans: [read.card.pan])
        return s
    }

    static func text(_ partial: PartialCardRead, source: String, transaction: Transaction,
                     configuration: TerminalConfiguration) -> String {
        var s = summary(application: partial.application, card: partial.card, cryptogram: partial.cryptogram,
                        cvm: partial.cvm, oda: partial.oda, source: source, transaction: transaction,
                        configuration: configuration)
        s += "\n" + table(partial.exchanges, pans: partial.card.map { [$0.pan] } ?? [])
        return s
    }

    static func summary(application: ApplicationInfo?, card: CardData?, cryptogram: Cryptogram?,
                        cvm: CardholderVerification?, cvmDecision: CVMDecision? = nil, oda: ODAResult? = nil, source: String,
                        transaction: Transaction, configuration: TerminalConfiguration) -> String {
        var rows: [(String, String)] = [("Card", source), ("Amount", amount(transaction, configuration))]
        if let a = application {
            var line = "\(a.brand.displayName)"
            if let label = a.label { line += " — \(label)" }
            if let name = a.preferredName, name != a.label { line += " (\(name))" }
            rows.append(("Application", line))
            rows.append(("AID", "\(a.aidHex)  kernel \(a.kernel)\(a.priority.map { "  priority \($0)" } ?? "")"))
        }
        if let c = card {
            rows.append(("PAN", "\(c.pan.masked)\(c.panSequenceNumber.map { "  PSN \($0 < 10 ? "0" : "")\($0)" } ?? "")"))
            rows.append(("Expiry", c.expiry.description))
            if let name = c.cardholderName { rows.append(("Cardholder", name)) }
        }
        if let cvm { rows.append(("CVM", cvmText(cvm))) }
        if let d = cvmDecision {
            rows.append(("CVM results", "\(Hex.encode(d.results))  (9F34)"))
            rows.append(("CVM rule", d.reason))
        }
        if let k = cryptogram {
            rows.append(("Cryptogram", "\(k.kind) (CID \(Hex.encode([k.cid])))  ATC \(k.atc)  AC \(Hex.encode(k.ac))  from \(k.source == .gpo ? "GPO" : "GENERATE AC")"))
            if !k.iad.isEmpty { rows.append(("IAD", Hex.encode(k.iad))) }
            rows.append(("Online data", truncate(Hex.encode(k.onlineDataBytes), 64)))
        }
        if let oda { rows.append(("ODA", odaText(oda))) }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { "\($0.0)\(String(repeating: " ", count: width - $0.0.count))  \($0.1)\n" }.joined()
    }

    /// The one line of offline data authentication: `fDDA with CA A000000003/E7: verified (TVR byte 1 00)`.
    static func odaText(_ oda: ODAResult) -> String {
        var text = oda.description
        if text.hasPrefix("ODA ") { text.removeFirst(4) }
        return "\(text)  (TVR byte 1 \(Hex.encode([oda.tvrByte1])))"
    }

    static func json(_ oda: ODAResult) -> JSONValue {
        func check(_ c: ODACheck, passed: String) -> JSONValue {
            switch c {
            case .passed: return .string(passed)
            case .failed(let reason): return .string("failed: \(reason)")
            case .absent: return .string("absent")
            case .notUsed: return .null
            }
        }
        return .object([
            "method": .string(oda.method.rawValue),
            "caKey": oda.caKey.map(JSONValue.string) ?? .null,
            "issuerCertificate": check(oda.issuerCertificate, passed: "recovered"),
            "iccCertificate": check(oda.iccCertificate, passed: "recovered"),
            "signature": check(oda.signature, passed: "verified"),
            "tvrByte1": .string(Hex.encode([oda.tvrByte1])),
        ])
    }

    static func truncate(_ s: String, _ n: Int) -> String {
        s.count <= n ? s : String(s.prefix(n - 1)) + "…"
    }

    static func table(_ exchanges: [Exchange], pans: [PAN]) -> String {
        var rows: [[String]] = [["#", "Command", "Command APDU", "Response", "SW", "µs"]]
        for (i, e) in exchanges.enumerated() {
            let sw: String
            if let r = e.response {
                sw = "\(r.statusWord.hex) \(r.statusWord.name)"
            } else {
                sw = "— \(e.failure?.description ?? "failed")"
            }
            rows.append([
                "\(i + 1)", e.command.summary,
                truncate(SensitiveData.displayHex(e.command, knownPANs: pans), 28),
                e.response.map { truncate(SensitiveData.displayHex($0.data, knownPANs: pans), 36) } ?? "",
                truncate(sw, 40),
                "\(e.micros)",
            ])
        }
        let widths = (0..<6).map { c in rows.map { $0[c].count }.max() ?? 0 }
        return rows.map { row in
            (0..<6).map { c in
                let pad = String(repeating: " ", count: widths[c] - row[c].count)
                return c == 0 || c == 5 ? pad + row[c] : row[c] + pad    // numbers right-aligned
            }.joined(separator: "  ").trimmingTrailingSpaces + "\n"
        }.joined()
    }

    // MARK: JSON

    static func json(_ read: CardRead, source: String, transaction: Transaction,
                     configuration: TerminalConfiguration) -> JSONValue {
        .object([
            "source": .string(source),
            "transaction": json(transaction, configuration),
            "application": json(read.application),
            "card": json(read.card),
            "cryptogram": json(read.cryptogram),
            "cvm": .string(read.cvm.rawValue),
            "cvmDecision": read.cvmDecision.map { d in
                JSONValue.object(["results": .string(Hex.encode(d.results)), "kernel": .string(d.kernel.description),
                                  "reason": .string(d.reason)])
            } ?? .null,
            "exchanges": json(read.exchanges, pans: [read.card.pan]),
            "oda": json(read.oda),
        ])
    }

    static func json(_ error: KernelError, source: String, transaction: Transaction,
                     configuration: TerminalConfiguration, exitCode: Int32) -> JSONValue {
        var e: [String: JSONValue] = [
            "exitCode": .int(Int(exitCode)),
            "code": .string(error.code.name),
            "step": .string(error.step.description),
            "reason": .string(error.reason),
            "message": .string(error.description),
        ]
        if let sw = error.statusWord { e["sw"] = .string(sw.hex) }
        if let c = error.channelError { e["channelError"] = .string(c.code.name) }
        let partial = error.partial ?? PartialCardRead()
        e["afterOnlineDataReady"] = .bool(partial.onlineDataWasReady)
        var d: [String: JSONValue] = [
            "source": .string(source),
            "transaction": json(transaction, configuration),
            "error": .object(e),
            "exchanges": json(partial.exchanges, pans: partial.card.map { [$0.pan] } ?? []),
        ]
        if let a = partial.application { d["application"] = json(a) }
        if let c = partial.card { d["card"] = json(c) }
        if let k = partial.cryptogram { d["cryptogram"] = json(k) }
        if let cvm = partial.cvm { d["cvm"] = .string(cvm.rawValue) }
        if let oda = partial.oda { d["oda"] = json(oda) }
        return .object(d)
    }

    static func json(_ t: Transaction, _ c: TerminalConfiguration) -> JSONValue {
        .object(["amount": .int(Int(t.amount)), "currency": .int(Int(c.currencyCode)),
                 "type": .string(String(describing: t.type))])
    }

    static func json(_ a: ApplicationInfo) -> JSONValue {
        .object([
            "aid": .string(a.aidHex),
            "label": a.label.map(JSONValue.string) ?? .null,
            "preferredName": a.preferredName.map(JSONValue.string) ?? .null,
            "priority": a.priority.map { .int(Int($0)) } ?? .null,
            "brand": .string(a.brand.rawValue),
            "kernelId": .int(Int(a.kernelID)),
            "kernel": .string(a.kernel.description),
            "aip": .string(Hex.encode(a.applicationInterchangeProfile)),
            "languagePreference": a.languagePreference.map(JSONValue.string) ?? .null,
        ])
    }

    static func json(_ c: CardData) -> JSONValue {
        .object([
            "panMasked": .string(c.pan.masked),
            "first6": .string(c.pan.first6),
            "last4": .string(c.pan.last4),
            "expiry": .string(c.expiry.description),
            "panSequenceNumber": c.panSequenceNumber.map { .int($0) } ?? .null,
            "cardholderName": c.cardholderName.map(JSONValue.string) ?? .null,
            "serviceCode": c.track2.map { .string($0.serviceCode) } ?? .null,
            "issuerCountryCode": c.issuerCountryCode.map { .int($0) } ?? .null,
        ])
    }

    static func json(_ k: Cryptogram) -> JSONValue {
        .object([
            "cid": .string(Hex.encode([k.cid])),
            "type": .string(k.kind.rawValue),
            "atc": .int(Int(k.atc)),
            "ac": .string(Hex.encode(k.ac)),
            "iad": .string(Hex.encode(k.iad)),
            "unpredictableNumber": .string(Hex.encode(k.unpredictableNumber)),
            "source": .string(k.source.rawValue),
            "onlineData": .string(Hex.encode(k.onlineDataBytes)),
            "onlineDataObjects": .array(k.onlineData.map {
                .object(["tag": .string($0.tag.hex), "value": .string(Hex.encode($0.value))])
            }),
        ])
    }

    static func json(_ exchanges: [Exchange], pans: [PAN]) -> JSONValue {
        .array(exchanges.map { e in
            var d: [String: JSONValue] = [
                "name": .string(e.command.summary),
                "command": .string(SensitiveData.displayHex(e.command, knownPANs: pans)),
                "response": e.response.map { .string(SensitiveData.displayHex($0.data, knownPANs: pans)) } ?? .null,
                "sw": e.response.map { .string($0.statusWord.hex) } ?? .null,
                "micros": .int(Int(e.micros)),
                "startMicros": .int(Int(e.start.components.seconds * 1_000_000
                                        + e.start.components.attoseconds / 1_000_000_000_000)),
            ]
            if let r = e.response { d["swMeaning"] = .string(r.statusWord.name) }
            if let f = e.failure { d["failure"] = .string(f.name) }
            return .object(d)
        })
    }
}
