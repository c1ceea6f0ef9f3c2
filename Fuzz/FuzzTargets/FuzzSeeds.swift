import BERTLV
import CardChannel
import EMVKernel
import Foundation
import ISO7816
import PaymentGateway
import VirtualCard
import APDUTrace

/// The seed inputs of every harness, made from the repository's real traces and captures
/// (`apdu-traces/`, whose `captures/` holds the Proxmark3 sniffs of `/work/shared/real-traces`
/// and the pcsc-spy logs) and the built-in card profiles. `scripts/dev fuzz --seeds` writes them
/// to `Fuzz/corpus/<harness>/`; they are committed, and the regression tests replay them.
public enum FuzzSeeds {
    /// The seeds of `harness`, named, from the repository at `root`.
    public static func make(for harness: String, repository root: String) -> [(name: String, bytes: [UInt8])] {
        let sources = Sources(root: root)
        var out: [(String, [UInt8])] = []
        var seen: Set<[UInt8]> = []
        func add(_ name: String, _ bytes: [UInt8]) {
            guard !bytes.isEmpty, seen.insert(bytes).inserted else { return }
            out.append((name, bytes))
        }
        switch harness {
        case "tlv":
            for (name, t) in sources.traces {
                for (k, r) in t.responses.enumerated() { add("\(name)-response-\(k + 1)", r.data) }
            }
        case "dol":
            for (name, t) in sources.traces {
                for r in t.responses {
                    guard let nodes = try? BERTLV.parse(r.data) else { continue }
                    for n in nodes.flattened where [Tag.pdol, .cdol1, .cdol2, 0x9F49, 0x9F69].contains(n.tag) {
                        add("\(name)-\(n.tag.hex)", n.valueBytes)
                    }
                }
            }
        case "apdu":
            for (name, t) in sources.traces {
                for (k, c) in t.commands.enumerated() { add("\(name)-command-\(k + 1)", c) }
                for (k, r) in t.responses.enumerated() where r.data.count <= 64 {
                    add("\(name)-response-\(k + 1)", r.bytes)
                }
            }
            add("hex-text", Array("00 A4 04 00 0e 32 50 41 59 2E 53 59 53 2E 44 44 46 30 31 00".utf8))
        case "trace":
            for (name, bytes) in sources.files(in: "apdu-traces", suffix: ".apdu") { add(name, bytes) }
        case "pcsc-spy":
            for suffix in [".spylog", ".spyout"] {
                for (name, bytes) in sources.files(in: "apdu-traces/captures", suffix: suffix) { add(name, bytes) }
            }
        case "proxmark3":
            for (name, bytes) in sources.files(in: "apdu-traces/captures", suffix: ".trace") { add(name, bytes) }
        case "card-profile":
            for p in CardProfiles.all { add(p.name, Array(p.jsonText.utf8)) }
        case "card":
            let profiles = CardProfiles.all
            for (k, (name, t)) in sources.traces.enumerated() {
                add(name, [UInt8(k % profiles.count)] + FuzzInput.messages(t.commands))
            }
        case "oda-data":
            add("ca-keys-built-in", Array(CAPublicKeyList.builtInFile.utf8))
            add("crl", Array("# revoked issuer certificates\nA000000003 E7 0BAD01\n".utf8))
        case "kernel":
            for (name, t) in sources.traces { add(name, [0x00] + FuzzInput.messages(t.responses.map(\.bytes))) }
        case "webhook":
            let t = Int64(WebhookHarness.now.timeIntervalSince1970) - 5
            let body = Array(#"{"id":"pay_1","event":"payment.succeeded","orderId":"order-1","amount":1250}"#.utf8)
            let header = WebhookSignature.header(body: body, secret: WebhookHarness.secret, timestamp: t)
            add("signed", Array(header.utf8) + [0x0A] + body)
            let signature = WebhookSignature.signature(body: body, secret: WebhookHarness.secret, timestamp: t)
            add("two-signatures", Array("t=\(t), v1=\(String(repeating: "0", count: 64)), v0=x, v1=\(signature)".utf8) + [0x0A] + body)
            add("stale", Array("t=1,v1=\(String(repeating: "ab", count: 32))".utf8) + [0x0A] + body)
            add("no-header", [0x0A] + body)
        case "graphql":
            for (name, bytes) in GraphQLHarness.seeds { add(name, bytes) }
        case "gateway-http":
            for (name, bytes) in GatewayHTTPHarness.seeds { add(name, bytes) }
        default:
            break
        }
        return out
    }

    /// The traces of the repository, with their commands and responses.
    struct Sources {
        struct Played {
            var commands: [[UInt8]] = []
            var responses: [ResponseAPDU] = []
        }

        let root: String
        /// Every `.apdu` trace and every capture, imported, by file name.
        var traces: [(String, Played)] {
            var out: [(String, Played)] = []
            for (name, bytes) in files(in: "apdu-traces", suffix: ".apdu") {
                if let t = try? APDUTrace(parsing: bytes) { out.append((stem(name), played(t))) }
            }
            for (name, bytes) in files(in: "apdu-traces/captures", suffix: ".trace") {
                if let t = try? Proxmark3Importer.importTrace(bytes) { out.append((stem(name), played(t))) }
            }
            return out
        }

        func played(_ trace: APDUTrace) -> Played {
            var p = Played()
            for e in trace.entries {
                switch e.kind {
                case .command(let c): p.commands.append(c)
                case .response(let r): p.responses.append(r)
                case .event: break
                }
            }
            return p
        }

        func files(in folder: String, suffix: String) -> [(String, [UInt8])] {
            let dir = "\(root)/\(folder)"
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(suffix) }
            return names.sorted().compactMap { name in
                FileManager.default.contents(atPath: "\(dir)/\(name)").map { (name, Array($0)) }
            }
        }

        func stem(_ name: String) -> String {
            String(name.split(separator: ".").first ?? Substring(name))
        }
    }
}
