import Foundation

/// Where the embedded gateway keeps its ledger when the caller does not say (`--data-dir`).
public enum DataDirectory {
    /// `$XDG_DATA_HOME/tapemu` when `XDG_DATA_HOME` is set to an absolute path (the XDG Base
    /// Directory spec ignores relative ones), else `$HOME/.local/share/tapemu`, else the
    /// account's home directory from the system, then `.local/share/tapemu`.
    public static func defaultPath() -> String {
        defaultPath(environment: ProcessInfo.processInfo.environment)
    }

    /// ``defaultPath()`` for the given environment variables.
    public static func defaultPath(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return join(xdg, "tapemu")
        }
        let home: String
        if let h = environment["HOME"], h.hasPrefix("/") {
            home = h
        } else {
            home = FileManager.default.homeDirectoryForCurrentUser.path
        }
        return join(join(home, ".local/share"), "tapemu")
    }

    private static func join(_ a: String, _ b: String) -> String {
        a.hasSuffix("/") ? a + b : a + "/" + b
    }
}
