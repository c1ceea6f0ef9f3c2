import Storage

extension Ledger {
    /// Every row of an order — its sale, refunds and reversal — oldest first.
    public func payments(orderId: String) throws(GatewayError) -> [Payment] {
        try withReader { (c) throws(GatewayError) in
            try Self.select(c, "WHERE order_id = ? ORDER BY created_at, rowid", [.text(orderId)])
        }
    }

    /// The refunds and the reversal of a sale, oldest first.
    public func children(ofPaymentId paymentId: String) throws(GatewayError) -> [Payment] {
        try withReader { (c) throws(GatewayError) in
            try Self.select(c, "WHERE parent_id = ? ORDER BY created_at, rowid", [.text(paymentId)])
        }
    }

    /// Sales, newest first; at most `limit`.
    public func recentSales(limit: Int) throws(GatewayError) -> [Payment] {
        try withReader { (c) throws(GatewayError) in
            try Self.select(c, "WHERE kind = 'sale' ORDER BY created_at DESC, rowid DESC LIMIT ?", [SQLValue(max(0, limit))])
        }
    }
}
