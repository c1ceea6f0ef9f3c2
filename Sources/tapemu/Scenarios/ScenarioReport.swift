import Foundation
import TapToPayTesting

extension GatewayOptions {
    /// The options for a data directory chosen by the command itself (`scenarios run`'s temporary one).
    init(dataDirectory: String) { self.dataDirectory = dataDirectory }
}

/// `scenarios run`'s outputs: the table, `--json` and `--junit`, from the same grades.
enum ScenarioReport {
    static func verdict(_ g: ScenarioGrade) -> String {
        g.skipped != nil ? "SKIP" : g.passed ? "PASS" : "FAIL"
    }

    static func table(_ grades: [ScenarioGrade]) -> [String] {
        let width = max(8, grades.map(\.scenario.name.count).max() ?? 8)
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        var lines = [pad("SCENARIO", width) + "  RESULT  " + pad("SDK", 29) + "  " + pad("TRUTH", 22) + "  BACKEND"]
        for g in grades {
            let sdk = g.played.map { "\($0.sdk)" } ?? "-"
            let truth = g.played.map { $0.truth.rawValue } ?? "-"
            let backend = g.conclusion.map { c in c.state + (c.amount.map { " \($0)" } ?? "") } ?? "-"
            lines.append(pad(g.scenario.name, width) + "  " + pad(verdict(g), 6) + "  " + pad(sdk, 29) + "  " + pad(truth, 22) + "  " + backend)
            if let f = g.failure { lines.append("    \(f)") }
            if let s = g.skipped { lines.append("    skipped: \(s)") }
        }
        let failed = grades.filter { $0.failure != nil }.count
        let skipped = grades.filter { $0.skipped != nil }.count
        lines.append("\(grades.count) scenarios: \(grades.count - failed - skipped) passed, \(failed) failed, \(skipped) skipped")
        return lines
    }

    /// A load run's table: one line per scenario with its counts, and each distinct failure once.
    static func summary(_ grades: [ScenarioGrade]) -> [String] {
        var order = [String]()
        var byName = [String: [ScenarioGrade]]()
        for g in grades {
            if byName[g.scenario.name] == nil { order.append(g.scenario.name) }
            byName[g.scenario.name, default: []].append(g)
        }
        let width = max(8, order.map(\.count).max() ?? 8)
        func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
        var lines = [pad("SCENARIO", width) + "  PAYMENTS  PASSED  FAILED  SKIPPED"]
        for name in order {
            let gs = byName[name]!
            let failed = gs.filter { $0.failure != nil }, skipped = gs.filter { $0.skipped != nil }.count
            lines.append(pad(name, width) + "  " + pad("\(gs.count)", 8) + "  " + pad("\(gs.count - failed.count - skipped)", 6)
                         + "  " + pad("\(failed.count)", 6) + "  \(skipped)")
            for f in Set(failed.compactMap(\.failure)).sorted() {
                lines.append("    \(failed.first { $0.failure == f }!.orderId): \(f)")
            }
        }
        let failed = grades.filter { $0.failure != nil }.count
        let skipped = grades.filter { $0.skipped != nil }.count
        lines.append("\(grades.count) payments graded: \(grades.count - failed - skipped) passed, \(failed) failed, \(skipped) skipped")
        return lines
    }

    static func json(_ grades: [ScenarioGrade]) -> JSONValue {
        let items: [JSONValue] = grades.map { g in
            .object([
                "scenario": .string(g.scenario.name), "orderId": .string(g.orderId), "result": .string(verdict(g).lowercased()),
                "sdk": g.played.map { .string("\($0.sdk)") } ?? .null,
                "truth": g.played.map { p in
                    .object(["submitted": .bool(p.submitted), "charged": .bool(p.charged), "recorded": .bool(p.recorded),
                             "summary": .string(p.truth.rawValue)])
                } ?? .null,
                "chargedAgain": g.again.map { .bool($0.charged) } ?? .null,
                "backend": g.conclusion.map { c in .object(["state": .string(c.state), "amount": c.amount.map(JSONValue.int) ?? .null]) } ?? .null,
                "accepted": .array(g.scenario.acceptedStates.map(JSONValue.string)),
                "failure": g.failure.map(JSONValue.string) ?? .null,
                "skipped": g.skipped.map(JSONValue.string) ?? .null,
            ])
        }
        let failed = grades.filter { $0.failure != nil }.count
        let skipped = grades.filter { $0.skipped != nil }.count
        return .object(["scenarios": .array(items), "passed": .int(grades.count - failed - skipped),
                        "failed": .int(failed), "skipped": .int(skipped)])
    }

    static func junit(_ grades: [ScenarioGrade]) -> String {
        let failed = grades.filter { $0.failure != nil }.count
        let skipped = grades.filter { $0.skipped != nil }.count
        let total = grades.reduce(0.0) { $0 + seconds($1.duration) }
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites>\n"
        xml += "  <testsuite name=\"tapemu scenarios\" tests=\"\(grades.count)\" failures=\"\(failed)\" errors=\"0\" skipped=\"\(skipped)\" time=\"\(format(total))\">\n"
        for g in grades {
            xml += "    <testcase classname=\"tapemu.scenarios.\(escape(g.scenario.face.rawValue))\" name=\"\(escape(g.scenario.name))\" time=\"\(format(seconds(g.duration)))\">\n"
            if let f = g.failure {
                xml += "      <failure message=\"\(escape(f))\">\(escape(details(g)))</failure>\n"
            } else if let s = g.skipped {
                xml += "      <skipped message=\"\(escape(s))\"/>\n"
            }
            xml += "      <system-out>\(escape(details(g)))</system-out>\n"
            xml += "    </testcase>\n"
        }
        xml += "  </testsuite>\n</testsuites>\n"
        return xml
    }

    static func details(_ g: ScenarioGrade) -> String {
        var s = "order \(g.orderId); \(g.scenario.seed); how: \(g.scenario.how)"
        if let p = g.played { s += "; sdk: \(p.sdk); truth: \(p.truth.rawValue)" }
        if let c = g.conclusion { s += "; backend: \(c.state)" }
        s += "; accepted: \(g.scenario.acceptedStates.joined(separator: " or "))"
        return s
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
    static func format(_ x: Double) -> String { String(format: "%.3f", x) }

    static func escape(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\n": out += "&#10;"
            default:
                // XML 1.0 has no other control characters.
                if scalar.value < 0x20 && scalar != "\t" { out += "?" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }
}
