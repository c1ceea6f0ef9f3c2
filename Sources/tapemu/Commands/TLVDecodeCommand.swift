import EMVDisplay
import BERTLV
import ISO7816

/// `tapemu tlv decode HEX|-`: the tree of a BER-TLV blob with EMV names and decoded values.
struct TLVDecodeCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "tlv decode",
        abstract: "Decode BER-TLV: the tree with EMV tag names and decoded values.",
        arguments: OutputOptions.arguments + [Self.strict, Self.input],
        discussion: """
            Reads hex (spaces and colons between bytes are fine) from the argument, or from
            stdin when it is '-'. Prints each data object as tag, name, length and its decoded
            value, indented by depth. PANs and track data are always shown masked (first 6 and
            last 4 digits); their raw bytes are never printed.
            """,
        exitCodes: [(ExitCode.dataError, "the input is not valid hex or not valid BER-TLV, or it is larger than \(HexInput.limit / 1024) KiB of hex"),
                    (ExitCode.ioError, "stdin cannot be read")])

    static let input = Positional("<hex>|-", help: "The TLV bytes in hex, or '-' to read them from stdin.",
                                  missing: "<hex> (or '-' for stdin)")
    static let strict = Flag("--strict", help: "Reject 00 padding and non-minimal lengths (default: EMV rules).")

    var input: String
    var strict: Bool
    var output: OutputOptions

    init(arguments: inout Arguments) throws(UsageError) {
        output = OutputOptions(arguments: &arguments)
        strict = arguments.isSet(Self.strict)
        input = try arguments.value(Self.input)
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        let bytes = try HexInput.read(input, console: console)
        let objects: [TLV]
        do {
            objects = try BERTLV.parse(bytes, rules: strict ? .strict : .emv)
        } catch {
            throw CommandFailure.dataError("not valid BER-TLV: \(error)")
        }
        guard !objects.isEmpty else { throw CommandFailure.dataError("no TLV object in \(bytes.count) byte(s)") }
        if bytes.suffix(2) == [0x90, 0x00], let last = objects.last, last.tag == 0x90, last.value.isEmpty {
            console.printError("tapemu: note: the last bytes 9000 look like a status word; "
                               + "'tapemu apdu decode --response' decodes a whole response")
        }
        try output.print(json: TLVRender.json(objects), text: TLVRender.text(objects), to: console)
        return ExitCode.success
    }
}
