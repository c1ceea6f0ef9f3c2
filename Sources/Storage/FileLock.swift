import Foundation
import Timing
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock(2)` lock on a file: the lease of a live process. The kernel lets go of it
/// when the process ends, however it ends (a SIGKILL included), so "the lock is free" means
/// "its owner is gone". `flock` locks belong to the open file, not the process: two opens in one
/// process exclude each other too, so a recovery and a live sale in one process behave as two
/// processes do.
///
/// A lock file may be removed by its holder (``releaseAndRemove()``); a process that opened the
/// old file before it went checks, once it holds the lock, that the path still names the file
/// it locked, and starts again if not.
package final class FileLock: @unchecked Sendable {
    /// Why a lock could not be taken or made.
    package struct Failure: Error, Sendable {
        package var reason: String
        package var errno: Int32
        package var isReadOnly: Bool { errno == EROFS }
    }

    package let path: String
    private var fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { release() }

    /// Takes the lock, waiting for its holder to let go. Blocks the calling thread.
    package static func acquire(_ path: String) throws(Failure) -> FileLock {
        guard let lock = try take(path, wait: true) else {
            throw Failure(reason: "the lock was not granted", errno: EAGAIN)
        }
        return lock
    }

    /// Takes the lock off Swift's cooperative pool (``withBlockingCall(_:)``, the one bridge from
    /// blocking calls), so a long wait never holds a thread of the pool.
    package static func acquire(_ path: String) async throws(Failure) -> FileLock {
        try await withBlockingCall { () throws(Failure) -> FileLock in try acquire(path) }
    }

    /// Takes the lock if nobody holds it; nil when a live holder has it.
    package static func tryAcquire(_ path: String) throws(Failure) -> FileLock? {
        try take(path, wait: false)
    }

    private static func take(_ path: String, wait: Bool) throws(Failure) -> FileLock? {
        for _ in 0..<64 {
            let fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                let e = errno
                throw Failure(reason: "cannot open \(path): \(String(cString: strerror(e)))", errno: e)
            }
            var rc: Int32
            repeat { rc = flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) } while rc != 0 && errno == EINTR
            if rc != 0 {
                let e = errno
                close(fd)
                if e == EWOULDBLOCK { return nil }
                throw Failure(reason: "cannot lock \(path): \(String(cString: strerror(e)))", errno: e)
            }
            // The holder before us may have removed the file: then this lock guards nothing.
            var held = stat()
            var named = stat()
            if fstat(fd, &held) == 0, stat(path, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev {
                return FileLock(path: path, fd: fd)
            }
            close(fd)
        }
        throw Failure(reason: "cannot lock \(path): it keeps being replaced", errno: EAGAIN)
    }

    /// Lets go of the lock (idempotent).
    package func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    /// Removes the lock file while still holding it, then lets go.
    package func releaseAndRemove() {
        guard fd >= 0 else { return }
        unlink(path)
        release()
    }
}
