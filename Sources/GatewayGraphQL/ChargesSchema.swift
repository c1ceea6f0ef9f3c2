public import GraphQL
public import PaymentGateway
import Foundation
public import PaymentRules

/// The GraphQL schema of the gateway: MONEI's `charges` query and `charge(id:)` over the
/// ledger's sales.
///
/// Shaped after MONEI's GraphQL API (https://docs.monei.com/apis/graphql/), checked against
/// its published reference (github.com/MONEI/docs, docs/apis/graphql/): the `charges` query
/// (operations/queries/charges.mdx: `charges(filter: SearchableChargeFilterInput, size: Int,
/// from: Int): ChargesConnection!`), `ChargesConnection { items: [Charge!]!  total: Int! }`
/// (types/objects/charges-connection.mdx), the `Charge` object (types/objects/charge.mdx),
/// `ChargeStatus` (types/enums/charge-status.mdx), `SearchableChargeFilterInput` (whose
/// `orderId` is a `SearchableStringFilterInput`, types/inputs/searchable-charge-filter-input.mdx)
/// and `PaymentMethodCard` (`brand` from `CardBrand`, `last4`, `expiration: AWSTimestamp`;
/// types/objects/payment-method-card.mdx). This schema is the subset tapemu's ledger can fill:
///
/// ```graphql
/// type Query {
///   charges(filter: SearchableChargeFilterInput, size: Int = 20, from: Int = 0): ChargesConnection!
///   charge(id: ID!): Charge
/// }
/// type ChargesConnection { items: [Charge!]!  total: Int! }
/// input SearchableChargeFilterInput {
///   id: SearchableIDFilterInput  orderId: SearchableStringFilterInput
///   status: SearchableStringFilterInput  currency: SearchableStringFilterInput
///   amount: SearchableIntFilterInput
///   and: [SearchableChargeFilterInput]  or: [SearchableChargeFilterInput]  not: SearchableChargeFilterInput
/// }
/// input SearchableIDFilterInput { eq: ID  ne: ID }
/// input SearchableStringFilterInput { eq: String  ne: String }   # MONEI's also has match, wildcard, regexp, …
/// input SearchableIntFilterInput { eq: Int  ne: Int  gt: Int  gte: Int  lt: Int  lte: Int }
/// enum ChargeStatus { SUCCEEDED PENDING PENDING_PROCESSING FAILED CANCELED REFUNDED PARTIALLY_REFUNDED AUTHORIZED EXPIRED PAID_OUT }
/// type Charge {
///   id: ID!  accountId: ID  orderId: ID  amount: Int  currency: String!  status: ChargeStatus!
///   statusCode: String  statusMessage: String  issuerResponseCode: String  authorizationCode: String
///   refundedAmount: Int  lastRefundAmount: Int  lastRefundReason: RefundReason  cancellationReason: CancellationReason  createdAt: AWSTimestamp (Int)  updatedAt: AWSTimestamp (Int)
///   description: String  paymentMethod: PaymentMethod
///   # tapemu's own (the ledger holds them; MONEI's Charge does not have them):
///   callbackUrl: String  uniqueRef: String!  transactionCode: String!  cryptogram: String!  reversed: Boolean!
///   refunds: [ChargeOperation!]!  reversal: ChargeOperation  sdkVersion: String
/// }
/// type PaymentMethod { method: String  card: PaymentMethodCard }
/// type PaymentMethodCard { brand: String  last4: String  expiration: Int }
/// type ChargeOperation { id: ID!  type: String!  amount: Int!  currency: String!  uniqueRef: String!
///                        statusCode: String  statusMessage: String  authorizationCode: String  createdAt: Int }
/// ```
///
/// Not verified: whether MONEI reports a tap-to-pay charge with `method: "card"` or its
/// `cardPresent` payment method; which instant `expiration` holds (``MoneiCard/expiration(_:)``).
///
/// Timestamps are unix seconds (MONEI's `AWSTimestamp`). `description` is always null: a
/// tapemu payment has none. The status of a charge maps the ledger's state: approved →
/// `SUCCEEDED`, declined → `FAILED`, reversed (a cancelled authorisation too) → `CANCELED`,
/// refunded → `REFUNDED`, refunded in part → `PARTIALLY_REFUNDED`, authorised and not captured
/// (MONEI `transactionType: AUTH`) → `AUTHORIZED`. MONEI's other values (`PENDING`, `EXPIRED`,
/// `PENDING_PROCESSING`, `PAID_OUT`) are in the enum and never appear. `statusCode` and
/// `statusMessage` are MONEI's E-code and its message (``MoneiStatusCode``); tapemu adds
/// `issuerResponseCode`, the emulated issuer's ISO 8583 answer. `lastRefundReason` and
/// `cancellationReason` are MONEI's `RefundReason` and `CancellationReason` enums.
///
/// Absence is not proof: an empty `items` means the ledger holds no such sale now, not that the
/// card was not charged (seed 000, step 4).
public enum ChargesSchema {
    /// The largest `size` (a bigger one is a field error).
    public static let maxPageSize = 1000

    public static func make(_ source: any ChargeDataSource) -> Schema {
        Schema(queryType: "Query", types: [
            .object(ObjectType("Query", fields: [
                FieldDefinition("charges", TypeReference.named("ChargesConnection").required, arguments: [
                    InputValueDefinition("filter", "SearchableChargeFilterInput"),
                    InputValueDefinition("size", "Int", defaultValue: .int(20)),
                    InputValueDefinition("from", "Int", defaultValue: .int(0)),
                ], description: "Sales matching the filter, newest first") { _, args in
                    try charges(source, args)
                },
                FieldDefinition("charge", "Charge", arguments: [InputValueDefinition("id", TypeReference.named("ID").required)]) { _, args in
                    guard let id = args["id"]?.string else { return .null }
                    guard let sale = try source.sales(orderId: nil, paymentId: id).first else { return .null }
                    return .object(ChargeNode(sale: sale, source: source))
                },
            ])),
            .object(ObjectType("ChargesConnection", fields: [
                FieldDefinition("items", TypeReference.named("Charge").required.listOf.required) { s, _ in
                    .list((s as! Page).items.map { .object($0) })
                },
                FieldDefinition("total", TypeReference.named("Int").required) { s, _ in .value(.int((s as! Page).total)) },
            ])),
            .object(chargeType),
            .object(ObjectType("PaymentMethod", fields: [
                leaf("method", "String") { _ in .string("card") },
                FieldDefinition("card", "PaymentMethodCard") { s, _ in .object(s) },
            ])),
            .object(ObjectType("PaymentMethodCard", fields: [
                leaf("brand", "String") { .string(MoneiCard.brand($0.cardBrand)) },
                leaf("last4", "String") { .string($0.last4) },
                leaf("expiration", "Int") { p in MoneiCard.expiration(p.expiry).map { .int(Int($0)) } ?? .null },
            ])),
            .object(ObjectType("ChargeOperation", fields: [
                leaf("id", TypeReference.named("ID").required) { .string($0.paymentId) },
                leaf("type", TypeReference.named("String").required) { .string($0.kind.rawValue) },
                leaf("amount", TypeReference.named("Int").required) { .int($0.amount) },
                leaf("currency", TypeReference.named("String").required) { .string($0.currency) },
                leaf("uniqueRef", TypeReference.named("String").required) { .string($0.uniqueRef) },
                leaf("statusCode", "String") { .string(MoneiStatusCode.of($0.statusCode).code) },
                leaf("statusMessage", "String") { .string(MoneiStatusCode.of($0.statusCode).message) },
                leaf("authorizationCode", "String") { p in p.authorisationCode.map { .string($0) } ?? .null },
                leaf("createdAt", "Int") { .int(seconds($0.createdAt)) },
            ])),
            .enumeration(EnumType("RefundReason", values: MoneiCard.cancellationReasons)),
            .enumeration(EnumType("CancellationReason", values: MoneiCard.cancellationReasons)),
            .enumeration(EnumType("ChargeStatus", values: ["SUCCEEDED", "PENDING", "PENDING_PROCESSING", "FAILED",
                                                           "CANCELED", "REFUNDED", "PARTIALLY_REFUNDED", "AUTHORIZED",
                                                           "EXPIRED", "PAID_OUT"])),
            .inputObject(InputObjectType("SearchableChargeFilterInput", fields: [
                InputValueDefinition("id", "SearchableIDFilterInput"),
                InputValueDefinition("orderId", "SearchableStringFilterInput"),
                InputValueDefinition("status", "SearchableStringFilterInput"),
                InputValueDefinition("currency", "SearchableStringFilterInput"),
                InputValueDefinition("amount", "SearchableIntFilterInput"),
                InputValueDefinition("and", TypeReference.named("SearchableChargeFilterInput").listOf),
                InputValueDefinition("or", TypeReference.named("SearchableChargeFilterInput").listOf),
                InputValueDefinition("not", "SearchableChargeFilterInput"),
            ])),
            .inputObject(InputObjectType("SearchableIDFilterInput", fields: [
                InputValueDefinition("eq", "ID"), InputValueDefinition("ne", "ID"),
            ])),
            .inputObject(InputObjectType("SearchableStringFilterInput", fields: [
                InputValueDefinition("eq", "String"), InputValueDefinition("ne", "String"),
            ])),
            .inputObject(InputObjectType("SearchableIntFilterInput", fields: [
                InputValueDefinition("eq", "Int"), InputValueDefinition("ne", "Int"),
                InputValueDefinition("gt", "Int"), InputValueDefinition("gte", "Int"),
                InputValueDefinition("lt", "Int"), InputValueDefinition("lte", "Int"),
            ])),
        ])
    }

    /// MONEI's name of a sale's state.
    public static func status(_ p: Payment) -> String { MoneiStatus.of(p) }

    static func seconds(_ d: Date) -> Int { Int(d.timeIntervalSince1970.rounded(.down)) }

    /// A field of a payment that needs no arguments.
    private static func leaf(_ name: String, _ type: TypeReference,
                             _ value: @escaping @Sendable (Payment) -> JSONValue) -> FieldDefinition {
        FieldDefinition(name, type) { s, _ in
            if let node = s as? ChargeNode { return .value(value(node.sale)) }
            return .value(value(s as! Payment))
        }
    }

    /// Built per schema, not held in a global (see the graphql fuzz harness: LeakSanitizer
    /// cannot follow a global's indirect enum payloads).
    private static var chargeType: ObjectType { ObjectType("Charge", fields: [
        leaf("id", TypeReference.named("ID").required) { .string($0.paymentId) },
        leaf("accountId", "ID") { p in p.accountId.map { .string($0) } ?? .null },
        leaf("orderId", "ID") { .string($0.orderId) },
        leaf("amount", "Int") { .int($0.amount) },
        leaf("currency", TypeReference.named("String").required) { .string($0.currency) },
        leaf("status", TypeReference.named("ChargeStatus").required) { .string(status($0)) },
        leaf("statusCode", "String") { .string(MoneiStatusCode.of($0.statusCode).code) },
        leaf("statusMessage", "String") { .string(MoneiStatusCode.of($0.statusCode).message) },
        leaf("issuerResponseCode", "String") { .string($0.statusCode) },
        leaf("authorizationCode", "String") { p in p.authorisationCode.map { .string($0) } ?? .null },
        leaf("refundedAmount", "Int") { .int($0.refundedAmount) },
        leaf("lastRefundReason", "RefundReason") { p in p.lastRefundReason.map { .string($0) } ?? .null },
        leaf("cancellationReason", "CancellationReason") { p in p.cancellationReason.map { .string($0) } ?? .null },
        FieldDefinition("lastRefundAmount", "Int") { s, _ in
            let node = s as! ChargeNode
            if let amount = node.sale.lastRefundAmount { return .value(.int(amount)) }
            guard let last = Payment.lastRefund(among: try node.source.children(ofPaymentId: node.sale.paymentId))
            else { return .null }
            return .value(.int(last.amount))
        },
        leaf("createdAt", "Int") { .int(seconds($0.createdAt)) },
        leaf("updatedAt", "Int") { .int(seconds($0.updatedAt)) },
        leaf("description", "String") { _ in .null },
        leaf("callbackUrl", "String") { p in p.callbackUrl.map { .string($0) } ?? .null },
        FieldDefinition("paymentMethod", "PaymentMethod") { s, _ in .object((s as! ChargeNode).sale) },
        leaf("uniqueRef", TypeReference.named("String").required) { .string($0.uniqueRef) },
        leaf("transactionCode", TypeReference.named("String").required) { .string($0.transactionCode.rawValue) },
        leaf("cryptogram", TypeReference.named("String").required) { .string($0.cryptogram.rawValue) },
        leaf("reversed", TypeReference.named("Boolean").required) { .bool($0.reversed) },
        leaf("sdkVersion", "String") { p in p.sdkVersion.map { .string($0) } ?? .null },
        FieldDefinition("refunds", TypeReference.named("ChargeOperation").required.listOf.required) { s, _ in
            let node = s as! ChargeNode
            return .list(try node.source.children(ofPaymentId: node.sale.paymentId)
                .filter { $0.kind == .refund }.map { .object($0) })
        },
        FieldDefinition("reversal", "ChargeOperation") { s, _ in
            let node = s as! ChargeNode
            guard let r = try node.source.children(ofPaymentId: node.sale.paymentId).first(where: { $0.kind == .reversal })
            else { return .null }
            return .object(r)
        },
    ]) }

    // MARK: charges

    private static func charges(_ source: any ChargeDataSource, _ args: [String: JSONValue]) throws -> Resolved {
        let size = args["size"]?.int ?? 20
        let from = args["from"]?.int ?? 0
        guard (0...maxPageSize).contains(size) else {
            throw GraphQLError("size must be between 0 and \(maxPageSize)")
        }
        guard from >= 0 else { throw GraphQLError("from must be 0 or more") }
        let filter = args["filter"] ?? .null
        // The orderId or id of the top level narrows the read; the whole filter is applied after.
        let orderId = filter["orderId"]?["eq"]?.string
        let id = filter["id"]?["eq"]?.string
        let sales = try source.sales(orderId: orderId, paymentId: id)
            .filter { matches($0, filter) }
            .sorted { ($0.createdAt, $0.paymentId) > ($1.createdAt, $1.paymentId) }
        let page = Array(sales.dropFirst(from).prefix(size)).map { ChargeNode(sale: $0, source: source) }
        return .object(Page(items: page, total: sales.count))
    }

    static func matches(_ p: Payment, _ filter: JSONValue) -> Bool {
        guard case .object(let members) = filter else { return true }
        for (key, condition) in members where condition != .null {
            switch key {
            case "id": if !compare(.string(p.paymentId), condition) { return false }
            case "orderId": if !compare(.string(p.orderId), condition) { return false }
            case "status": if !compare(.string(status(p)), condition) { return false }
            case "currency": if !compare(.string(p.currency), condition) { return false }
            case "amount": if !compare(.int(p.amount), condition) { return false }
            case "and": if !(condition.array ?? []).allSatisfy({ matches(p, $0) }) { return false }
            case "or":
                let options = condition.array ?? []
                if !options.isEmpty && !options.contains(where: { matches(p, $0) }) { return false }
            case "not": if matches(p, condition) { return false }
            default: continue
            }
        }
        return true
    }

    /// Equality of a field and an operand; text byte for byte (``OrderID/same(_:_:)``), as the
    /// top-level `orderId` and `id` filters are narrowed in the ledger's SQL: nested in `or`,
    /// `and` or `not`, or as `ne`, the same filter gives the same payments.
    private static func same(_ value: JSONValue, _ operand: JSONValue) -> Bool {
        if case .string(let a) = value, case .string(let b) = operand { return OrderID.same(a, b) }
        return value == operand
    }

    private static func compare(_ value: JSONValue, _ condition: JSONValue) -> Bool {
        guard case .object(let ops) = condition else { return true }
        for (op, operand) in ops where operand != .null {
            switch (op, value, operand) {
            case ("eq", _, _): if !same(value, operand) { return false }
            case ("ne", _, _): if same(value, operand) { return false }
            case ("gt", .int(let a), .int(let b)): if !(a > b) { return false }
            case ("gte", .int(let a), .int(let b)): if !(a >= b) { return false }
            case ("lt", .int(let a), .int(let b)): if !(a < b) { return false }
            case ("lte", .int(let a), .int(let b)): if !(a <= b) { return false }
            default: continue
            }
        }
        return true
    }
}

/// A sale with the source its refunds and reversal are read from.
struct ChargeNode: Sendable {
    var sale: Payment
    var source: any ChargeDataSource
}

struct Page: Sendable {
    var items: [ChargeNode]
    var total: Int
}
