import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A file the user names on the command line, read whole: a regular file, or a pipe
/// (`-f <(command)`, `/dev/stdin`), never more than `limit` bytes (`/dev/zero` never ends). Each
/// failure is one line that says what the system said, never Foundation's error dump.
enum UserFile {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        var st = stat()
        if stat(path, &st) != 0 {
            throw Failure(description: String(cString: strerror(errno)).lowercased())
        }
        if st.st_mode & S_IFMT == S_IFDIR { throw Failure(description: "it is a directory") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(description: String(cString: strerror(errno)).lowercased()) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: String(cString: strerror(errno)).lowercased())
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else {
                throw Failure(description: "it holds more than \(limit >> 20) MiB (a device such as /dev/zero never ends)")
            }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }
}
