public import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real browser for tests: headless Chromium (Debian's `chromium`) driven over the Chrome
/// DevTools Protocol on `--remote-debugging-pipe` — the browser reads NUL-terminated JSON commands
/// on fd 3 and writes answers and events on fd 4, so no WebSocket client and no port are needed.
///
/// Blocking by design (a test helper): each call waits on `poll` with a deadline, so a browser
/// that hangs fails the test with ``Failure`` instead of hanging it.
public final class HeadlessChromium {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The browser's executable, or nil when Chromium is not installed.
    public static func executable() -> String? {
        for path in ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        return nil
    }

    private let pid: pid_t
    private let commands: Int32   // we write here; the browser's fd 3
    private let answers: Int32    // we read here; the browser's fd 4
    private let profile: URL
    private var buffer: [UInt8] = []
    private var nextId = 0
    private var session: String?

    public init(executable: String) throws {
        profile = FileManager.default.temporaryDirectory
            .appendingPathComponent("tapemu-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)

        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else {
            throw Failure(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // Our ends stay ours: not inherited by this or any other child.
        _ = fcntl(toBrowser[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fromBrowser[0], F_SETFD, FD_CLOEXEC)
        // The child's ends, moved above 4 first: dup2 onto the same number would keep O_CLOEXEC.
        let childRead = fcntl(toBrowser[0], F_DUPFD_CLOEXEC, 10)
        let childWrite = fcntl(fromBrowser[1], F_DUPFD_CLOEXEC, 10)
        close(toBrowser[0])
        close(fromBrowser[1])

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, childRead, 3)
        posix_spawn_file_actions_adddup2(&actions, childWrite, 4)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        let arguments = [executable, "--headless", "--no-sandbox", "--disable-gpu",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking",
                         "--user-data-dir=\(profile.path)", "--window-size=1280,900",
                         "--remote-debugging-pipe", "about:blank"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, nil, &argv, environ)
        close(childRead)
        close(childWrite)
        guard status == 0 else {
            close(toBrowser[1])
            close(fromBrowser[0])
            throw Failure(description: "posix_spawn \(executable): \(String(cString: strerror(status)))")
        }
        pid = child
        commands = toBrowser[1]
        answers = fromBrowser[0]
    }

    deinit {
        close(commands)
        close(answers)
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        try? FileManager.default.removeItem(at: profile)
    }

    /// Opens `url` in a new page and waits for its load event.
    public func open(_ url: String, timeout: Duration = .seconds(20)) throws {
        let target = try call("Target.createTarget", ["url": "about:blank"], timeout: timeout)
        guard let targetId = target["targetId"] as? String else {
            throw Failure(description: "Target.createTarget answered \(target)")
        }
        let attached = try call("Target.attachToTarget", ["targetId": targetId, "flatten": true],
                                timeout: timeout)
        session = attached["sessionId"] as? String
        _ = try call("Page.enable", [:], timeout: timeout)
        _ = try call("Page.navigate", ["url": url], timeout: timeout)
        _ = try waitForEvent("Page.loadEventFired", timeout: timeout)
    }

    /// Evaluates a JavaScript expression in the page (promises awaited) and returns its value.
    public func evaluate(_ expression: String, timeout: Duration = .seconds(20)) throws -> Any? {
        let result = try call("Runtime.evaluate",
                              ["expression": expression, "awaitPromise": true, "returnByValue": true],
                              timeout: timeout)
        if let exception = result["exceptionDetails"] as? [String: Any] {
            throw Failure(description: "the page threw: \(exception["text"] ?? exception)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `condition` (a JavaScript boolean expression) until it is true, with the page's own
    /// timers (a real event: the DOM changed), or fails after `timeout`.
    public func waitUntil(_ condition: String, timeout: Duration = .seconds(20)) throws {
        let milliseconds = Int(timeout.components.seconds * 1000)
        let script = """
            new Promise((resolve) => {
              const started = Date.now();
              const check = () => {
                if (\(condition)) { resolve(true); return; }
                if (Date.now() - started > \(milliseconds)) { resolve(false); return; }
                requestAnimationFrame(check);
              };
              check();
            })
            """
        guard try evaluate(script, timeout: timeout + .seconds(5)) as? Bool == true else {
            throw Failure(description: "the page never showed: \(condition)")
        }
    }

    /// Lays the page out as on a screen `width` × `height` CSS pixels wide (a phone: 390 × 844),
    /// device scale 1, and waits for the layout to settle (two animation frames).
    public func setViewport(width: Int, height: Int, mobile: Bool = false) throws {
        _ = try call("Emulation.setDeviceMetricsOverride",
                     ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile], timeout: .seconds(20))
        _ = try evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
    }

    /// A PNG of the page as it is now: the viewport, or the whole page when `fullPage`.
    public func screenshot(fullPage: Bool = false) throws -> Data {
        var parameters: [String: Any] = ["format": "png"]
        if fullPage {
            let metrics = try call("Page.getLayoutMetrics", [:], timeout: .seconds(20))
            let size = metrics["cssContentSize"] as? [String: Any] ?? [:]
            let width = size["width"] as? Double ?? 1280
            let height = min(size["height"] as? Double ?? 900, 8000)
            parameters["captureBeyondViewport"] = true
            parameters["clip"] = ["x": 0, "y": 0, "width": width, "height": height, "scale": 1] as [String: Any]
        }
        let result = try call("Page.captureScreenshot", parameters, timeout: .seconds(20))
        guard let base64 = result["data"] as? String, let png = Data(base64Encoded: base64) else {
            throw Failure(description: "Page.captureScreenshot answered no image")
        }
        return png
    }

    // MARK: The protocol

    private func call(_ method: String, _ parameters: [String: Any], timeout: Duration) throws -> [String: Any] {
        nextId += 1
        let id = nextId
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if let session, !method.hasPrefix("Target.") { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: "the browser closed its pipe (\(method))") }
            written += n
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let answer = try nextMessage(until: deadline, waitingFor: method)
            guard answer["id"] as? Int == id else { continue }
            if let error = answer["error"] as? [String: Any] {
                throw Failure(description: "\(method): \(error["message"] ?? error)")
            }
            return answer["result"] as? [String: Any] ?? [:]
        }
    }

    private func waitForEvent(_ name: String, timeout: Duration) throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let message = try nextMessage(until: deadline, waitingFor: name)
            if message["method"] as? String == name { return message }
        }
    }

    private func nextMessage(until deadline: ContinuousClock.Instant, waitingFor what: String) throws -> [String: Any] {
        while true {
            if let end = buffer.firstIndex(of: 0) {
                let message = Array(buffer[..<end])
                buffer.removeSubrange(...end)
                if let object = try? JSONSerialization.jsonObject(with: Data(message)) as? [String: Any] {
                    return object
                }
                continue
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Failure(description: "no answer from the browser in time (\(what))") }
            var descriptor = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + 1, 60_000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = read(answers, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: "the browser exited (\(what))") }
            buffer += chunk[..<n]
        }
    }
}
