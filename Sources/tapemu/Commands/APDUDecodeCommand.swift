import EMVKernel
import BERTLV
import ISO7816

/// `tapemu apdu decode [--response] HEX|-`: explains a command or response APDU.
struct APDUDecodeCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "apdu decode",
        abstract: "Explain a command APDU (or a response APDU with --response).",
        arguments: [Self.response] + OutputOptions.arguments + [Self.input],
        discussion: """
            A command is explained field by field: its ISO 7816 case and encoding (short or
            extended), CLA, the instruction's name, what P1 and P2 mean for SELECT, READ RECORD,
            GET PROCESSING OPTIONS, GENERATE AC and GET DATA, Lc, the data (as TLV when it is),
            and Le. With --response the bytes are data + SW1 SW2: the data is decoded as TLV and
            the status word is named. The bytes are read as a command unless --response is given.
            """,
        exitCodes: [(ExitCode.dataError, "the input is not valid hex or not a well-formed APDU, or it is larger than \(HexInput.limit / 1024) KiB of hex"),
                    (ExitCode.ioError, "stdin cannot be read")])

    static let input = Positional("<hex>|-", help: "The APDU in hex, or '-' to read it from stdin.",
                                  missing: "<hex> (or '-' for stdin)")
    static let response = Flag("--response", "-r", help: "The bytes are a response APDU (data + SW1 SW2).")

    var input: String
    var response: Bool
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        response = arguments.isSet(Self.response)
        input = try arguments.value(Self.input)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let bytes = try HexInput.read(input, console: console)
        if response {
            let r: ResponseAPDU
            do { r = try ResponseAPDU(bytes: bytes) } catch {
                throw CommandFailure.dataError("not a response APDU: \(error.reason)")
            }
            try output.print(json: APDUExplainer.json(r), text: APDUExplainer.text(r), to: console)
        } else {
            let c: CommandAPDU
            do { c = try CommandAPDU(bytes: bytes) } catch {
                let hint = bytes.count == 2 ? " (for a status word or response, add --response)" : ""
                throw CommandFailure.dataError("not a command APDU: \(error.reason)\(hint)")
            }
            try output.print(json: APDUExplainer.json(c), text: APDUExplainer.text(c), to: console)
        }
        return ExitCode.success
    }
}
