public import Foundation
import Storage

/// Which terminal sent each order (schema version 4): the gateway service lets a terminal act
/// only on its own orders — authorise, look up, refund, reverse — whichever of its tokens it
/// uses (``TerminalIdentity``: the account and the point of sale a token was issued to).
///
/// A terminal's authorisation writes its claim with its sale, in the sale's savepoint of the
/// group commit (``recordSales(_:beforeCommit:)``): durable together or not at all, and never
/// removed. ``claimOrder(_:by:tokenId:at:)`` claims alone, in a transaction of its own.
extension Ledger {
    /// Version 4: one row per orderId a terminal sent, additive (no row of an older table
    /// changes). Applied after version 3.
    static let migrationV4 = """
        CREATE TABLE IF NOT EXISTS terminal_orders (
            order_id TEXT PRIMARY KEY NOT NULL,
            account_id TEXT NOT NULL,
            point_of_sale_id TEXT NOT NULL,
            token_id TEXT NOT NULL,
            claimed_at INTEGER NOT NULL
        );
        """

    /// Claims `orderId` for `terminal` unless another terminal sent it first or the ledger holds
    /// payments of it that no terminal claimed.
    public func claimOrder(_ orderId: String, by terminal: TerminalIdentity, tokenId: String,
                           at now: Date) throws(GatewayError) -> OrderClaim {
        try withConnection { (c) throws(GatewayError) in
            try c.transaction { () throws(GatewayError) -> OrderClaim in
                try Self.claim(orderId, by: terminal, tokenId: tokenId, at: now, c)
            }
        }
    }

    /// The claim's rule, in the caller's transaction (writes the claim only when it is `.mine`
    /// and new).
    static func claim(_ orderId: String, by terminal: TerminalIdentity, tokenId: String, at now: Date,
                      _ c: SQLiteConnection) throws(GatewayError) -> OrderClaim {
        // Payments first, then the claim, as on PostgreSQL (here the write transaction sees one
        // snapshot; the order keeps the two backends' rule in one shape).
        let paid = try c.query("SELECT 1 FROM payments WHERE order_id = ? LIMIT 1", [.text(orderId)]).first != nil
        if let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = ?",
                                 [.text(orderId)]).first {
            return row[0].string == terminal.accountId && row[1].string == terminal.pointOfSaleId
                ? .mine : .otherTerminal
        }
        if paid { return .unowned }
        _ = try c.run("""
            INSERT INTO terminal_orders (order_id, account_id, point_of_sale_id, token_id, claimed_at)
            VALUES (?, ?, ?, ?, ?)
            """, [.text(orderId), .text(terminal.accountId), .text(terminal.pointOfSaleId), .text(tokenId),
                  .integer(millis(now))])
        return .mine
    }

    /// The terminal that sent `orderId` (nil: none claimed it).
    public func orderTerminal(_ orderId: String) throws(GatewayError) -> TerminalIdentity? {
        try withReader { (c) throws(GatewayError) in
            guard let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = ?",
                                        [.text(orderId)]).first,
                  let account = row[0].string, let pos = row[1].string else { return nil }
            return TerminalIdentity(accountId: account, pointOfSaleId: pos)
        }
    }
}
