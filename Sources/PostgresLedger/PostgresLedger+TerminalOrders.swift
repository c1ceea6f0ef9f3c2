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
            func owner() throws(PostgresError) -> TerminalIdentity? {
                guard let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = $1",
                                            [.text(orderId)]).rows.first,
                      let account = row[0], let pos = row[1] else { return nil }
                return TerminalIdentity(accountId: account, pointOfSaleId: pos)
            }
            if let o = try owner() { return .success(o == terminal ? .mine : .otherTerminal) }
            if try c.query("SELECT 1 FROM payments WHERE order_id = $1 LIMIT 1", [.text(orderId)]).rows.first != nil {
                return .success(.unowned)
            }
            try c.query("""
                INSERT INTO terminal_orders (order_id, account_id, point_of_sale_id, token_id, claimed_at)
                VALUES ($1, $2, $3, $4, $5) ON CONFLICT (order_id) DO NOTHING
                """, [.text(orderId), .text(terminal.accountId), .text(terminal.pointOfSaleId), .text(tokenId),
                      .integer(LedgerRules.millis(now))])
            return .success(try owner() == terminal ? .mine : .otherTerminal)
        }
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
