import Foundation
import Testing
import TestSupport
@testable import tapemu

/// The dashboard in a real browser (headless Chromium over CDP) against a real
/// `tapemu gateway serve` with real payments.
@Suite("The dashboard in headless Chromium", .serialized, .temporaryDirectories)
struct DashboardBrowserTests {
    /// The package's root (this file is Tests/GatewayServiceTests/…).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test("the order filter finds the order; a payment made after the page opened appears without a reload; a failing webhook shows its retries; a screenshot is written")
    func dashboard() async throws {
        guard let executable = HeadlessChromium.executable() else {
            Issue.record("Chromium is not installed (/usr/bin/chromium): the dashboard test needs it — apt-get install chromium (scripts/dev setup installs it)")
            return
        }
        let receiver = try WebhookReceiver { path, _ in path == "/fail" ? 500 : 200 }
        let serverDir = try temporaryDirectory()
        let device = try temporaryDirectory()
        let (server, url, key) = try await ServeProcess.start(["--data-dir", serverDir] + testSchedule)
        let dashboardLine = try #require(await server.line(startingWith: "dashboard: "))
        // The notebook way: the printed URL carries the key once.
        #expect(dashboardLine == "dashboard: \(url)/dashboard?key=\(key)")
        func pay(_ order: String, amount: String = "1250", hook: String = "/ok") async {
            let r = await runCLI(["pay", "--amount", amount, "--order-id", order, "--callback-url", receiver.url + hook,
                                  "--gateway", url, "--api-key", key, "--data-dir", device, "--json"])
            #expect(r.status == 0 || r.status == PayCommand.declined, "\(r.err)")
        }
        await pay("order-1042")
        await pay("order-2001", amount: "3990")
        await pay("order-2002", amount: "1251")  // declined by the amount's trigger

        let browser = try HeadlessChromium(executable: executable)
        try browser.open(String(dashboardLine.dropFirst("dashboard: ".count)))
        try browser.waitUntil(##"document.querySelectorAll("#payments tbody tr[data-order-id]").length === 3"##)
        // The key left the address bar at once (a 303 to the page without it); the session is a
        // cookie the page's scripts cannot read (HttpOnly).
        #expect(try browser.evaluate("location.pathname + location.search") as? String == "/dashboard")
        #expect(try browser.evaluate("document.cookie") as? String == "")

        // The seed's step 3 as written: filter by order ID.
        _ = try browser.evaluate("""
            (() => { const f = document.getElementById("order-filter"); f.value = "order-1042";
                     f.dispatchEvent(new Event("input", { bubbles: true })); return true; })()
            """)
        try browser.waitUntil("""
            (() => { const rows = [...document.querySelectorAll("#payments tbody tr[data-order-id]")];
                     return rows.length === 1 && rows[0].dataset.orderId === "order-1042" && rows[0].dataset.status === "SUCCEEDED"; })()
            """)
        _ = try browser.evaluate("""
            (() => { const f = document.getElementById("order-filter"); f.value = "";
                     f.dispatchEvent(new Event("input", { bubbles: true })); return true; })()
            """)
        try browser.waitUntil(##"document.querySelectorAll("#payments tbody tr[data-order-id]").length === 3"##)

        // A payment made now appears by itself (the page polls).
        await pay("order-3003", amount: "2500")
        try browser.waitUntil(#"document.querySelector('#payments tbody tr[data-order-id="order-3003"]') !== null"#)

        // A payment whose receiver keeps failing: its page shows every attempt.
        await pay("order-4004", amount: "1800", hook: "/fail")
        _ = try #require(await server.line(startingWith: "tapemu: webhook 5 (order order-4004) attempt 2: HTTP 500"))
        try browser.waitUntil(#"document.querySelector('#payments tbody tr[data-order-id="order-4004"]') !== null"#)
        _ = try browser.evaluate("""
            (() => { document.querySelector('#payments tbody tr[data-order-id="order-4004"]').click(); return true; })()
            """)
        try browser.waitUntil("""
            (() => { const d = document.getElementById("payment-detail");
                     return !d.classList.contains("hidden")
                       && document.querySelectorAll('#webhook-attempts tbody tr[data-status="500"]').length >= 2; })()
            """)
        let attempts = try browser.evaluate(#"document.querySelectorAll('#webhook-attempts tbody tr[data-status="500"]').length"#)
        #expect((attempts as? Int ?? 0) >= 2)
        let order = try browser.evaluate(#"document.getElementById("detail-order-id").textContent"#) as? String
        #expect(order == "order-4004")
        let page = try browser.evaluate("document.body.innerText") as? String ?? ""
        #expect(!page.contains("4761739001010010") && !page.contains("4012888888881881"), "a full PAN on the page")

        let png = try browser.screenshot(fullPage: true)
        let dir = Self.packageRoot.appendingPathComponent(".build/screenshots")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("dashboard.png")
        try png.write(to: file)
        print("dashboard screenshot: \(file.path)")
        #expect(png.count > 10_000 && png.starts(with: [0x89, 0x50, 0x4E, 0x47]))

        // The list too, for a person to look at.
        _ = try browser.evaluate(##"(() => { location.hash = "#/"; return true; })()"##)
        try browser.waitUntil(#"document.getElementById("payment-detail").classList.contains("hidden")"#)
        let list = try browser.screenshot()
        try list.write(to: dir.appendingPathComponent("dashboard-list.png"))
        print("dashboard list screenshot: \(dir.appendingPathComponent("dashboard-list.png").path)")

        await server.stop()
        await receiver.server.stop()
    }
}
