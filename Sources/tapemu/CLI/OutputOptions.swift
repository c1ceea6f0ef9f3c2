/// Output options shared by every command that can print JSON.
struct OutputOptions: Sendable, Hashable {
    /// `--json`: one JSON document on stdout instead of human output.
    var json: Bool

    static let json = Flag("--json", help: "Print one JSON document on stdout instead of text.")
    static let arguments: [any CommandArgument] = [json]

    init(json: Bool = false) { self.json = json }

    init(arguments: inout Arguments) {
        json = arguments.isSet(Self.json)
    }
}

extension OutputOptions {
    /// The one rule of `--json`: one JSON document of `json` on stdout, else `text` for people.
    func print(json: @autoclosure () throws -> some Encodable, text: @autoclosure () -> String,
               to console: Console) throws {
        if self.json {
            try JSONOutput.print(json(), to: console)
        } else {
            console.write(text())
        }
    }
}
