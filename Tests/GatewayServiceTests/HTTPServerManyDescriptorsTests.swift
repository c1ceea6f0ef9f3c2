import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPClient
import HTTPServer
import Testing

/// libmicrohttpd's default select() takes no descriptor at or above FD_SETSIZE (1024): in a
/// process holding that many (a busy gateway, a test run with two hundred ledgers open) the
/// server refused to start. It polls instead.
@Suite("HTTP server in a process with more than FD_SETSIZE descriptors open", .serialized)
struct HTTPServerManyDescriptorsTests {
    @Test("the server starts on a descriptor above 1024 and serves a connection there")
    func startsAndServesAboveFDSetSize() async throws {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        if limit.rlim_cur < 1400 {
            limit.rlim_cur = min(limit.rlim_max, 4096)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        // Fill the descriptors up to 1100 (those other tests hold count too).
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        while true {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0, "open: \(String(cString: strerror(errno))) (RLIMIT_NOFILE \(limit.rlim_cur))")
            held.append(fd)
            if fd >= 1100 { break }
        }
        let server = try HTTPServer(configuration: HTTPServerConfiguration(connectionTimeout: .seconds(2)),
                                    handler: TestHandler())
        let r = try await HTTPClient().send(HTTPClientRequest(method: "POST", url: server.url + "/echo", body: Array("hi".utf8)))
        #expect(r.status == 200)
        #expect(String(decoding: r.body, as: UTF8.self) == "POST - hi")
        await server.stop()
    }
}
