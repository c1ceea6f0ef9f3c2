import Foundation
import PaymentFlow
import Testing
@testable import tapemu
import TestSupport

@Suite("tapemu help matches what the commands do", .temporaryDirectories)
struct HelpConsistencyTests {
    @Test("every option a command documents is in its usage line")
    func optionsInUsage() {
        for command in CommandRegistry.commands {
            let c = command.configuration
            for option in c.options {
                // "-o, --output <file>" → "-o"; "--terms accept|decline" → "--terms"; "<hex>|-" is no option.
                guard let name = option.names.split(separator: " ").first.map({ String($0).trimmingCharacters(in: [","]) }),
                      name.hasPrefix("-") else { continue }
                #expect(c.usageLine.contains(name), "\(c.commandName): \(name) is missing from the usage line")
            }
        }
    }

    @Test("pay's help says --location no-fix waits the location timeout")
    func noFixWaits() {
        let help = TapemuCLI.commandHelp(PayCommand.configuration)
        #expect(help.contains("no-fix (waits the 15 s location timeout"))
        #expect(PaymentTimeouts.default.locationFix == .seconds(15))
    }

    static let ledgerCommands: [[String]] = [
        ["pay", "--amount", "1000", "--order-id", "help-1"],
        ["sale", "--amount", "1000", "--order-id", "help-1"],
        ["charges", "--order-id", "help-1"],
        ["pending"],
        ["resolve"],
        ["gateway", "webhooks"],
        ["gateway", "token"],
        ["charges", "--pending"],
        ["pending", "close", "help-1", "--reason", "support"],
    ]

    @Test("a ledger that cannot be opened is one line and exit 74, and help says so", arguments: ledgerCommands)
    func unusableLedger(args: [String]) async throws {
        let dir = try temporaryDirectory()
        let file = dir + "/not-a-directory"
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: file))
        let r = await runCLI(args + ["--data-dir", file])
        #expect(r.status == 74)
        #expect(r.err.hasPrefix("tapemu: "))
        #expect(r.err.split(separator: "\n").count == 1)
        let words = try #require(TapemuCLI.lookup(args, in: CommandRegistry.commands)).0.configuration.words
        let help = await runCLI(["help"] + words)
        #expect(help.out.contains("\n  74 "), "tapemu help \(words.joined(separator: " ")) does not document 74")
    }

    @Test("a trace or profile file that does not exist is exit 66, and help says so",
          arguments: [["pay", "--amount", "1000", "--order-id", "help-2", "--data-dir", "DIR"],
                      ["sale", "--amount", "1000", "--order-id", "help-2", "--data-dir", "DIR"],
                      ["read"], ["bench", "-n", "1"]],
          ["--trace", "--card"])
    func unreadableTrace(args: [String], option: String) async throws {
        let dir = try temporaryDirectory()
        let r = await runCLI(args.map { $0 == "DIR" ? dir : $0 } + [option, dir + "/missing.\(option == "--card" ? "json" : "apdu")"])
        #expect(r.status == 66)
        #expect(r.err.split(separator: "\n").count == 1)
        let help = await runCLI(["help", args[0]])
        #expect(help.out.contains("--trace or --card file does not exist"))
    }
}
