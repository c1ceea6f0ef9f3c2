public import Foundation

/// Which terminal sent each order (schema version 4): the gateway service lets a terminal act
/// only on its own orders — authorise, look up, refund, reverse — whichever of its tokens it
/// uses (``TerminalIdentity``: the account and the point of sale a token was issued to).
///
/// A claim is written before the sale it guards, in a transaction of its own, and never
/// removed: a crash between the two leaves a claim without a sale (the order is still that
/// terminal's, and it finds nothing when it looks); never a sale another terminal can claim.
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
                if let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = ?",
                                         [.text(orderId)]).first {
                    return row[0].string == terminal.accountId && row[1].string == terminal.pointOfSaleId
                        ? .mine : .otherTerminal
                }
                if (try c.query("SELECT 1 FROM payments WHERE order_id = ? LIMIT 1", [.text(orderId)]).first) != nil {
                    return .unowned
                }
                _ = try c.run("""
                    INSERT INTO terminal_orders (order_id, account_id, point_of_sale_id, token_id, claimed_at)
                    VALUES (?, ?, ?, ?, ?)
                    """, [.text(orderId), .text(terminal.accountId), .text(terminal.pointOfSaleId), .text(tokenId),
                          .integer(Self.millis(now))])
                return .mine
            }
        }
    }

    /// The terminal that sent `orderId` (nil: none claimed it).
    public func orderTerminal(_ orderId: String) throws(GatewayError) -> TerminalIdentity? {
        try withConnection { (c) throws(GatewayError) in
            guard let row = try c.query("SELECT account_id, point_of_sale_id FROM terminal_orders WHERE order_id = ?",
                                        [.text(orderId)]).first,
                  let account = row[0].string, let pos = row[1].string else { return nil }
            return TerminalIdentity(accountId: account, pointOfSaleId: pos)
        }
    }
}
