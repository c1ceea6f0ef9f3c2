public import Foundation
public import PaymentGateway
import PostgresClient

/// Which terminal sent each order: the same contract as the SQLite ledger's (schema version 3
/// here, ``PostgresLedger/migrations``). Two servers claiming one orderId at once: the primary
/// key lets one insert in; both read the winner back.
extension PostgresLedger {
    static let terminalOrdersMigration = [
        """
        CREATE TABLE IF NOT EXISTS terminal_orders (
            order_id TEXT PRIMARY KEY NOT NULL,
            account_id TEXT NOT NULL,
            point_of_sale_id TEXT NOT NULL,
            token_id TEXT NOT NULL,
            claimed_at BIGINT NOT NULL
        )
        """,
    ]

    public func claimOrder(_ orderId: String, by terminal: TerminalIdentity, tokenId: String,
                           at now: Date) throws(GatewayError) -> OrderClaim {
        try write { (c) throws(PostgresError) -> Result<OrderClaim, GatewayError> in
            .success(try Self.claim(orderId, by: terminal, tokenId: tokenId, at: now, c))
        }
    }

    /// The claim's rule, in the caller's transaction (a terminal's sale claims in its savepoint
    /// of the group commit, ``storeSales(_:beforeCommit:)``).
    static func claim(_ orderId: String, by terminal: TerminalIdentity, tokenId: String, at now: Date,
                      _ c: PostgresConnection) throws(PostgresError) -> OrderClaim {
        func owner() throws(PostgresError) -> TerminalIdentity? {
            guard let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = $1",
                                        [.text(orderId)]).rows.first,
                  let account = row[0], let pos = row[1] else { return nil }
            return TerminalIdentity(accountId: account, pointOfSaleId: pos)
        }
        // Payments first, then the claim (each statement reads what is committed at its start):
        // a claim commits with its sale, so a sale another server committed between the two
        // reads shows its claim in the second; payments without a claim are truly nobody's.
        let paid = try c.query("SELECT 1 FROM payments WHERE order_id = $1 LIMIT 1", [.text(orderId)]).rows.first != nil
        if let o = try owner() { return o == terminal ? .mine : .otherTerminal }
        if paid { return .unowned }
        try c.query("""
            INSERT INTO terminal_orders (order_id, account_id, point_of_sale_id, token_id, claimed_at)
            VALUES ($1, $2, $3, $4, $5) ON CONFLICT (order_id) DO NOTHING
            """, [.text(orderId), .text(terminal.accountId), .text(terminal.pointOfSaleId), .text(tokenId),
                  .integer(LedgerRules.millis(now))])
        return try owner() == terminal ? .mine : .otherTerminal
    }

    public func orderTerminal(_ orderId: String) throws(GatewayError) -> TerminalIdentity? {
        try read { (c) throws(PostgresError) in
            guard let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = $1",
                                        [.text(orderId)]).rows.first,
                  let account = row[0], let pos = row[1] else { return nil }
            return TerminalIdentity(accountId: account, pointOfSaleId: pos)
        }
    }
}
