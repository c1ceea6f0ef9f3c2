import Foundation

// Top-level code is MainActor-isolated: keep it to this one call.
exit(await TapemuCLI.processMain(CommandLine.arguments))
