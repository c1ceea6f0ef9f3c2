public import Foundation

/// The checkout (Tests/TestSupport/ is two levels below it).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The Python that has MONEI's official SDK and junitparser: `TAPEMU_MONEI_PYTHON` (`scripts/dev
/// test` and `scripts/dev setup` install the pinned packages in .build/monei-venv and set it),
/// else .build/monei-venv's when it is there; nil on a machine never set up.
public var moneiPython: String? {
    if let p = ProcessInfo.processInfo.environment["TAPEMU_MONEI_PYTHON"], !p.isEmpty { return p }
    let venv = repositoryRoot.appendingPathComponent(".build/monei-venv/bin/python").path
    return FileManager.default.isExecutableFile(atPath: venv) ? venv : nil
}
