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
