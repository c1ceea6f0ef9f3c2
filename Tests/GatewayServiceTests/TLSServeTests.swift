import Foundation
@testable import GatewayService
import HTTPClient
@testable import HTTPServer
import PaymentGateway
import Testing
import TestSupport
@testable import tapemu

/// A throw-away PKI made with the openssl command line: a CA, a server certificate it signed for
/// 127.0.0.1, and an unrelated CA (the wrong one).
struct ThrowAwayPKI {
    let directory: String
    var ca: String { directory + "/ca.pem" }
    var wrongCA: String { directory + "/wrong-ca.pem" }
    var certificate: String { directory + "/server.pem" }
    var key: String { directory + "/server-key.pem" }

    init() throws {
        directory = try temporaryDirectory()
        func openssl(_ args: [String]) throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            p.arguments = args
            p.currentDirectoryURL = URL(fileURLWithPath: directory)
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            p.waitUntilExit()
            guard p.terminationStatus == 0 else { throw HTTPServerError("openssl \(args.prefix(2).joined(separator: " ")) failed") }
        }
        for name in ["ca", "wrong-ca"] {
            try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name)-key.pem", "-out", "\(name).pem",
                         "-days", "2", "-subj", "/CN=tapemu test \(name)"])
        }
        try openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server-key.pem", "-out", "server.csr",
                     "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try openssl(["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                     "-out", "server.pem", "-days", "2", "-extfile", "san.ext"])
    }
}

@Suite("TLS: gateway serve over HTTPS, terminals with --cacert", .serialized, .temporaryDirectories)
struct TLSServeTests {
    @Test("this machine's libmicrohttpd serves TLS (MHD_FEATURE_TLS)")
    func supported() {
        #expect(HTTPServerTLS.isSupported)
    }

    @Test("pay, charges and gateway token over https with the CA: approved; a wrong CA or none is refused before anything is sent (exit 69), naming the certificate")
    func payOverHTTPS() async throws {
        let pki = try ThrowAwayPKI()
        let (server, url, key) = try await ServeProcess.start(["--data-dir", try temporaryDirectory(),
                                                               "--tls-cert", pki.certificate, "--tls-key", pki.key])
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let device = try temporaryDirectory()
        let paid = await runCLI(["pay", "--amount", "1250", "--order-id", "tls-1", "--gateway", url, "--api-key", key,
                                 "--cacert", pki.ca, "--data-dir", device, "--json"])
        #expect(paid.status == 0, "\(paid.err)")
        #expect(try jsonObject(Array(paid.out.utf8))["status"] as? String == "approved")
        let charges = await runCLI(["charges", "--order-id", "tls-1", "--gateway", url, "--api-key", key, "--cacert", pki.ca,
                                    "--data-dir", device, "--json"])
        #expect(charges.status == 0 && charges.out.contains("approved"), "\(charges.err)")
        let token = await runCLI(["gateway", "token", "--gateway", url, "--api-key", key, "--cacert", pki.ca, "--json"])
        #expect(token.status == 0, "\(token.err)")
        #expect(try jsonObject(Array(token.out.utf8))["pointOfSaleId"] as? String == "tapemu-cli")

        for (name, extra) in [("wrong CA", ["--cacert", pki.wrongCA]), ("system CAs", [])] {
            let refused = await runCLI(["pay", "--amount", "1250", "--order-id", "tls-2", "--gateway", url, "--api-key", key,
                                        "--data-dir", device] + extra)
            #expect(refused.status == ExitCode.unavailable, "\(name): \(refused.err)")
            #expect(refused.err.contains("TLS certificate") && refused.err.contains("--cacert"), "\(name): \(refused.err)")
        }
        // Plain HTTP to the TLS port is no answer the client can read; nothing was recorded.
        let plain = url.replacingOccurrences(of: "https://", with: "http://")
        let wrongScheme = await runCLI(["pay", "--amount", "1250", "--order-id", "tls-3", "--gateway", plain, "--api-key", key,
                                        "--data-dir", device])
        #expect(wrongScheme.status == ExitCode.unavailable, "\(wrongScheme.err)")
        server.process.terminate()
        _ = await server.waitForExit()
    }

    @Test("--listen off loopback: refused without TLS (64); --insecure-listen serves and warns on start; --tls-cert without --tls-key is 64")
    func offLoopback() async throws {
        let dir = try temporaryDirectory()
        let refused = await runCLI(["gateway", "serve", "--listen", "0.0.0.0:0", "--data-dir", dir])
        #expect(refused.status == ExitCode.usage)
        #expect(refused.err.contains("--tls-cert") && refused.err.contains("--insecure-listen"), "\(refused.err)")
        let half = await runCLI(["gateway", "serve", "--listen", "127.0.0.1:0", "--tls-cert", "/nonexistent", "--data-dir", dir])
        #expect(half.status == ExitCode.usage)
        let missing = await runCLI(["gateway", "serve", "--listen", "127.0.0.1:0", "--tls-cert", dir + "/no.pem",
                                    "--tls-key", dir + "/no-key.pem", "--data-dir", dir])
        #expect(missing.status == ExitCode.noInput, "\(missing.err)")

        let server = try ServeProcess(["--data-dir", dir, "--insecure-listen"], listen: "0.0.0.0:0")
        let warning = try #require(await server.line(startingWith: "tapemu: WARNING: --insecure-listen"))
        #expect(warning.contains("API key") && warning.contains("readable"))
        #expect(try await server.url().hasPrefix("http://"))
        server.process.terminate()
        _ = await server.waitForExit()
    }

    @Test("the HTTPServer with a key that is not the certificate's refuses to start, saying so")
    func mismatchedKey() throws {
        let pki = try ThrowAwayPKI()
        let tls = try HTTPServerTLS(certificateFile: pki.certificate, privateKeyFile: pki.directory + "/wrong-ca-key.pem")
        var configuration = HTTPServerConfiguration()
        configuration.tls = tls
        #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(configuration: configuration, handler: HealthOnly())
        }
    }

    @Test("a failed start closes its own listening socket once: libmicrohttpd closes the copy it was given on a TLS failure, and the copy's number, taken by another file meanwhile, is left open")
    func failedStartClosesOnlyItsOwn() throws {
        let pki = try ThrowAwayPKI()
        var configuration = HTTPServerConfiguration()
        configuration.tls = try HTTPServerTLS(certificateFile: pki.certificate, privateKeyFile: pki.directory + "/wrong-ca-key.pem")
        let sentinel = open("/dev/null", O_RDONLY)
        defer { close(sentinel) }
        for _ in 0..<20 { #expect(throws: HTTPServerError.self) { _ = try HTTPServer(configuration: configuration, handler: HealthOnly()) } }
        #expect(fcntl(sentinel, F_GETFD) != -1)
        // The rule itself: a copy closed by libmicrohttpd whose number another file took (dup2
        // puts /dev/null there at once, as another thread's open would) is not closed again; a
        // copy still open is.
        let original = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(original) }
        let copy = fcntl(original, F_DUPFD_CLOEXEC, 0)
        let other = open("/dev/null", O_RDONLY)
        #expect(dup2(other, copy) == copy)
        close(other)
        ListenSocket.closeCopy(copy, of: original)
        #expect(fcntl(copy, F_GETFD) != -1, "another file at the copy's number was closed")
        close(copy)
        let live = fcntl(original, F_DUPFD_CLOEXEC, 0)
        ListenSocket.closeCopy(live, of: original)
        // Closed: the number is free, or another thread's new file took it (not our socket).
        var a = stat(), b = stat()
        #expect(fstat(original, &a) == 0)
        #expect(fstat(live, &b) != 0 || a.st_ino != b.st_ino, "a copy still open was left open")
        #expect(fcntl(original, F_GETFD) != -1)
    }

    struct HealthOnly: HTTPHandler {
        func handle(_ request: HTTPRequest) async -> HTTPResponse { HTTPResponse(status: 200) }
    }
}
