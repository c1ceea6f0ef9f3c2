import HTTPClient
import Testing

/// A client error's message goes to logs (the webhook deliverer's attempt lines): a callbackUrl's
/// query or user information — where a merchant may keep a secret token — stays out of it.
@Suite("HTTP client errors name the URL without its secrets")
struct HTTPClientErrorURLTests {
    @Test("could not connect, and not an http URL: the query, fragment and user information are left out", arguments: [
        ("http://127.0.0.1:1/hook?token=s3cret", "s3cret", "http://127.0.0.1:1/hook?…"),
        ("http://user:s3cret@127.0.0.1:1/hook", "s3cret", "http://…@127.0.0.1:1/hook"),
        ("http://127.0.0.1:1/hook#s3cret", "s3cret", "http://127.0.0.1:1/hook?…"),
        ("ftp://127.0.0.1/hook?key=s3cret", "s3cret", "ftp://127.0.0.1/hook?…"),
    ])
    func secretsStayOut(_ url: String, _ secret: String, _ shown: String) async {
        do {
            _ = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: url, timeout: .seconds(5)))
            Issue.record("\(url) answered")
        } catch {
            let text = "\(error)"
            #expect(!text.contains(secret), "\(text)")
            #expect(text.contains(shown), "\(text)")
        }
    }
}
