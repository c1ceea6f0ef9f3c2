import Foundation
import GatewayService
import GatewayWeb
import HTTPServer
import PaymentGateway

/// `tapemu gateway serve`'s routes — terminal, CoreAPI, merchant REST, admin, GraphQL and the
/// dashboard, mounted as the command mounts them — fed requests in process over one SQLite
/// ledger: what a merchant's backend or anything else on the network can send.
///
/// Input: a method byte, a flags byte (bit 0: the merchant API key in `Authorization`, never on
/// `/admin`, where it could arm a fault that kills the process; bit 1: `Content-Type:
/// application/json`), then text: the path and query up to the first newline, header lines up
/// to an empty line, and the body.
///
/// Every request is answered (no trap, no hang: the faults that wait are given no time); every
/// complete answer outside the dashboard's pages is a JSON object, and an error's names its
/// status; no answer holds the card number the request sent in `card.pan` (unless the request
/// holds it elsewhere too — an order id is the merchant's own text).
enum GatewayHTTPHarness {
    static let methods = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS"]

    /// The service of the inputs so far; a fresh ledger every `inputsPerLedger` inputs, so a long
    /// run's ledger does not grow without end.
    final class Serving: @unchecked Sendable {
        static let inputsPerLedger = 500
        var service: GatewayService?
        var router: Router?
        var directory: String?
        var inputs = 0

        /// Removes the ledger's directory (at exit: the process is done with it).
        func removeDirectory() {
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
        }

        /// `router` with the web routes mounted as `GatewayServeCommand.makeRouter` mounts them.
        static func withWeb(_ router: Router, _ service: GatewayService) -> Router {
            var router = router
            let web = service.onLedgerThreads(GatewayWebRoutes(ledger: service.gateway.ledger))
            router.mount("/graphql", .apiKey, web)
            router.mount("/", .dashboard, web)
            router.mount("/dashboard/*", .dashboard, web)
            return router
        }

        /// The service, and the router `tapemu gateway serve` makes of it. The web routes (GraphQL,
        /// dashboard) are made for each input: a global would hold the GraphQL schema through
        /// Swift's tagged enum payloads, which LeakSanitizer cannot see through.
        func next() throws(FuzzFailure) -> (GatewayService, Router) {
            inputs += 1
            if let service, let router, inputs % Self.inputsPerLedger != 0 { return (service, Self.withWeb(router, service)) }
            if let directory { try? FileManager.default.removeItem(atPath: directory) }
            let dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("tapemu-fuzz-gateway-\(getpid())-\(inputs)").path
            do {
                let gateway = try EmbeddedGateway(configuration: .init(dataDirectory: dir, slowAnswerDelay: .zero))
                let service = try GatewayService(gateway: gateway, noAnswerGrace: .zero)
                let router = service.routes()
                if self.directory == nil { atexit { GatewayHTTPHarness.serving.removeDirectory() } }
                (self.service, self.router, self.directory) = (service, router, dir)
                return (service, Self.withWeb(router, service))
            } catch {
                throw FuzzFailure("the gateway service does not open over a fresh directory: \(error)")
            }
        }
    }
    static let serving = Serving()

    /// The request of an input, or nil when there is none.
    /// Flag bit 0 sends the route's credential: a terminal's token on the terminal and CoreAPI
    /// routes, the API key elsewhere.
    static func request(_ input: [UInt8], apiKey: String, token: String) -> (HTTPRequest, pan: String?)? {
        guard input.count >= 2 else { return nil }
        let method = methods[Int(input[0]) % methods.count]
        let flags = input[1]
        let text = String(decoding: input.dropFirst(2), as: UTF8.self)
        let head: Substring, body: Substring
        if let blank = text.range(of: "\n\n") {
            head = text[..<blank.lowerBound]
            body = text[blank.upperBound...]
        } else {
            head = text[...]
            body = ""
        }
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false)
        let target = lines.isEmpty ? "/" : String(lines.removeFirst())
        let pathPart = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = pathPart.first.map(String.init) ?? "/"
        var query: [(name: String, value: String)] = []
        if pathPart.count > 1 {
            for item in pathPart[1].split(separator: "&") {
                let kv = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                query.append((String(kv[0]), kv.count > 1 ? String(kv[1]) : ""))
            }
        }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            // The waits are the harness's to set: none.
            if ["x-tapemu-timeout-ms", "x-tapemu-slow-ms", "authorization"].contains(name.lowercased()) { continue }
            headers.append((name, value))
        }
        headers.append(("X-Tapemu-Timeout-Ms", "0"))
        headers.append(("X-Tapemu-Slow-Ms", "0"))
        if flags & 1 != 0, !path.lowercased().hasPrefix("/admin") {
            let terminal = path.hasPrefix("/terminal/") || path.hasPrefix("/coreapi/")
            headers.append(("Authorization", terminal ? "Bearer \(token)" : apiKey))
        }
        if flags & 2 != 0 { headers.append(("Content-Type", "application/json")) }
        let bodyBytes = Array(body.utf8)
        var pan: String?
        if let object = try? JSONSerialization.jsonObject(with: Data(bodyBytes)) as? [String: Any],
           let card = object["card"] as? [String: Any], let p = card["pan"] as? String,
           p.count >= 12, p.allSatisfy(\.isASCII), p.allSatisfy(\.isNumber),
           text.components(separatedBy: p).count == 2 {
            pan = p
        }
        return (HTTPRequest(method: method, path: path, query: query, headers: headers, body: bodyBytes,
                            requestId: "fuzz"), pan)
    }

    @Sendable static func gatewayHTTP(_ input: [UInt8]) async throws(FuzzFailure) {
        let (service, router) = try serving.next()
        let token = service.gateway.issueToken(accountId: service.accountId, pointOfSaleId: "fuzz")
        guard let (request, pan) = request(input, apiKey: service.apiKey, token: token) else { return }
        let response = await router.handle(request)
        try expect((100...599).contains(response.status), "status \(response.status)")
        let text = String(decoding: response.body, as: UTF8.self)
        if let pan { try expect(!text.contains(pan), "an answer holds the card number the request sent") }
        guard response.delivery == .complete, request.method != "HEAD", !response.body.isEmpty else { return }
        let isPage = request.path == "/" || (request.path.hasPrefix("/dashboard") && !request.path.hasPrefix("/dashboard/api"))
        guard !isPage else { return }
        let object: [String: Any]
        do {
            guard let o = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
                throw FuzzFailure("an answer of \(request.method) \(request.path) is JSON but not an object")
            }
            object = o
        } catch let failure as FuzzFailure {
            throw failure
        } catch {
            throw FuzzFailure("an answer of \(request.method) \(request.path) (status \(response.status)) is not JSON: \(text.prefix(200))")
        }
        if response.status >= 400, !request.path.hasPrefix("/graphql") {
            try expect(object["statusCode"] as? Int == response.status,
                       "error \(response.status) of \(request.method) \(request.path) says statusCode \(object["statusCode"] ?? "none")")
            try expect((object["message"] as? String)?.isEmpty == false, "error \(response.status) without a message")
        }
    }

    /// Seeds: each route with a well-formed request, and a few refusals.
    static var seeds: [(String, [UInt8])] {
        func req(_ name: String, _ method: String, key: Bool = false, json: Bool = true, _ head: String, _ body: String = "") -> (String, [UInt8]) {
            let m = UInt8(methods.firstIndex(of: method)!)
            let flags: UInt8 = (key ? 1 : 0) | (json ? 2 : 0)
            return (name, [m, flags] + Array((head + "\n\n" + body).utf8))
        }
        let card = #""card":{"pan":"4012888888881881","expiry":"2812","brand":"visa"}"#
        return [
            req("authorise", "POST", key: true, "/terminal/v1/authorisations", #"{"orderId":"f-1","amount":1250,\#(card)}"#),
            req("authorise-declined", "POST", key: true, "/terminal/v1/authorisations", #"{"orderId":"f-2","amount":1251,\#(card)}"#),
            req("authorise-lost-answer", "POST", key: true, "/terminal/v1/authorisations\nX-Tapemu-Fault: lost-answer", #"{"orderId":"f-3","amount":1000,\#(card)}"#),
            req("authorise-no-answer", "POST", key: true, "/terminal/v1/authorisations", #"{"orderId":"f-4","amount":1291,\#(card)}"#),
            req("authorise-text-plain", "POST", key: true, json: false, "/terminal/v1/authorisations\nContent-Type: text/plain", #"{"orderId":"f-5","amount":1000,\#(card)}"#),
            req("charges", "GET", key: true, "/terminal/v1/charges?orderId=f-1"),
            req("refund", "POST", key: true, "/terminal/v1/refunds", #"{"uniqueRef":"x","amount":100}"#),
            req("reversal", "POST", key: true, "/coreapi/v1/reversal", #"{"uniqueRef":"x","deviceType":"APPLE_TTP"}"#),
            req("transactions", "GET", key: true, "/coreapi/v1/transactions?orderId=f-1&panLastFour=1881"),
            req("merchant-list", "GET", key: true, "/v1/payments?orderId=f-1"),
            req("merchant-refund", "POST", key: true, "/v1/payments/pay_1/refund", #"{"amount":100,"refundReason":"duplicated"}"#),
            req("merchant-cancel", "POST", key: true, "/v1/payments/pay_1/cancel", #"{"cancellationReason":"fraudulent"}"#),
            req("pos-auth-token", "POST", key: true, "/v1/pos/auth-token", #"{"pointOfSaleId":"pos-1"}"#),
            req("terms", "PUT", key: true, "/terminal/v1/terms", #"{"accountId":"acct_tapemu_test","accepted":true}"#),
            req("graphql", "POST", key: true, "/graphql", #"{"query":"{ charges(filter: {orderId: {eq: \"f-1\"}}) { items { id status amount } } }"}"#),
            req("dashboard-api", "GET", key: true, "/dashboard/api/payments?orderId=f-1"),
            req("admin-faults", "GET", key: true, "/admin/faults"),
            req("health", "GET", "/health"),
            req("unknown", "DELETE", "/terminal/v1/authorisations"),
        ]
    }
}
