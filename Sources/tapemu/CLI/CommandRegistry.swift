/// Every `tapemu` command. To add one, add its type here (one line); `help` and dispatch
/// find it from this list. Commands sharing a first word (`tlv decode`, `tlv encode`) form a group.
enum CommandRegistry {
    static var commands: [any TapemuCommand.Type] {
        [
            TLVDecodeCommand.self,
            APDUDecodeCommand.self,
            ReadCommand.self,
            CardsCommand.self,
            CardsShowCommand.self,
            CardsSchemaCommand.self,
            PayCommand.self,
            ChargesCommand.self,
            GatewayTriggersCommand.self,
            GatewayWebhooksCommand.self,
            GatewayLogsCommand.self,
            GatewayTokenCommand.self,
            GatewayServeCommand.self,
            GatewaySecretCommand.self,
            WebhookVerifyCommand.self,
            SaleCommand.self,
            PendingCommand.self,
            PendingCloseCommand.self,
            ResolveCommand.self,
            ReplayCommand.self,
            TraceImportCommand.self,
            TraceShowCommand.self,
            ReadersCommand.self,
            TransmitCommand.self,
            EmulateCommand.self,
            BenchCommand.self,
            CompletionCommand.self,
            ScenariosListCommand.self,
            ScenariosRunCommand.self,
            SupportAskCommand.self,
        ]
    }
}
