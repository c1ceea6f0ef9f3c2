/// `tapemu completion bash|zsh|fish`: the shell's completion script, generated from the option
/// tables of every command (``ShellCompletion``).
struct CompletionCommand: TapemuCommand {
    static let configuration = CommandConfiguration(
        commandName: "completion",
        abstract: "Print a shell completion script for bash, zsh or fish.",
        arguments: [Self.shell],
        discussion: """
            The script completes every command, subcommand and option, and file names after the \
            options that take a file; it is generated from the same tables as `tapemu help`, so it \
            is never behind the commands. bash: `source <(tapemu completion bash)` (or save it in \
            ~/.local/share/bash-completion/completions/tapemu); zsh: save it as `_tapemu` in a \
            directory of $fpath; fish: `tapemu completion fish > ~/.config/fish/completions/tapemu.fish`.
            `tapemu help --man` prints the manual page (`tapemu help --man | man -l -`).
            """)

    static let shell = Positional("bash|zsh|fish", help: "The shell to complete for.", missing: "the shell (bash, zsh or fish)")

    var shell: ShellCompletion.Shell

    init(arguments: inout Arguments) throws(UsageError) {
        let text = try arguments.value(Self.shell)
        guard let shell = ShellCompletion.Shell(rawValue: text) else {
            throw UsageError("unknown shell '\(text)' (bash, zsh or fish)")
        }
        self.shell = shell
        try arguments.finish()
    }

    func run(_ console: Console) async throws -> Int32 {
        console.write(ShellCompletion.script(shell, commands: CommandRegistry.commands))
        return ExitCode.success
    }
}
