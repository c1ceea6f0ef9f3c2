import DeviceStore
import Foundation
import PaymentGateway
import Synchronization
import CoreAPI

/// Prints each listener callback as one line when it fires (or keeps it for the `--json` array).
final class CallbackPrinter: CoreAPISaleListener, CoreAPIRefundListener, CoreAPIDeviceListener {
    private let console: Console
    private let json: Bool
    private let kept = Mutex<[JSONValue]>([])

    init(console: Console, json: Bool) {
        self.console = console
        self.json = json
    }

    /// Every callback so far, in order.
    var records: [JSONValue] { kept.withLock { $0 } }

    private func emit(_ line: String, _ record: [String: JSONValue]) {
        kept.withLock { $0.append(.object(record)) }
        if !json { console.print(line) }
    }

    private static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }

    static func saleJSON(_ sale: CoreSale) -> JSONValue {
        .object(["amount": .int(sale.amount), "currency": .string(sale.currency), "orderId": .string(sale.orderId),
                 "maskedPAN": optional(sale.maskedPAN), "cardType": optional(sale.cardType),
                 "uniqueRef": optional(sale.uniqueRef)])
    }

    func onSaleResponse(_ r: CoreSaleResponse) {
        emit("onSaleResponse code=\(r.code) order=\(r.orderId) uniqueRef=\(r.uniqueRef) amount=\(r.amount) \(r.currency) card=\(r.cardType) \(r.maskedPAN) auth=\(r.authCode ?? "-") response=\(r.responseCode) \(r.responseText)",
             ["callback": .string("onSaleResponse"), "code": .string(r.code), "approved": .bool(r.isApproved),
              "orderId": .string(r.orderId), "uniqueRef": .string(r.uniqueRef), "amount": .int(r.amount),
              "currency": .string(r.currency), "cardType": .string(r.cardType), "maskedPAN": .string(r.maskedPAN),
              "authCode": Self.optional(r.authCode), "responseCode": .string(r.responseCode),
              "responseText": .string(r.responseText), "paymentId": .string(r.paymentId)])
    }

    func onError(_ error: CoreError, withDescription message: String?) {
        emit("onError \(error.rawValue) \(error.name): \(message ?? "")",
             ["callback": .string("onError"), "error": .int(error.rawValue), "errorName": .string(error.name),
              "description": Self.optional(message)])
    }

    func onTransactionCommError(_ sale: CoreSale, withError error: CoreError, withMessage message: String?) {
        emit("onTransactionCommError order=\(sale.orderId) amount=\(sale.amount) \(sale.currency) card=\(sale.cardType ?? "?") \(sale.maskedPAN ?? "?") error=\(error.rawValue) \(error.name): \(message ?? "")",
             ["callback": .string("onTransactionCommError"), "sale": Self.saleJSON(sale), "error": .int(error.rawValue),
              "errorName": .string(error.name), "message": Self.optional(message)])
    }

    func onRefundResponse(_ r: CoreRefundResponse) {
        emit("onRefundResponse code=\(r.code) uniqueRef=\(r.uniqueRef) of=\(r.originalUniqueRef) amount=\(r.amount) \(r.currency) remaining=\(r.remainingAmount)",
             ["callback": .string("onRefundResponse"), "code": .string(r.code), "uniqueRef": .string(r.uniqueRef),
              "originalUniqueRef": .string(r.originalUniqueRef), "amount": .int(r.amount), "currency": .string(r.currency),
              "remainingAmount": .int(r.remainingAmount)])
    }

    func onDeviceError(_ deviceError: CoreDeviceError, withDescription message: String?) {
        emit("onDeviceError \(deviceError.rawValue) \(deviceError.name): \(message ?? "")",
             ["callback": .string("onDeviceError"), "error": .int(deviceError.rawValue),
              "errorName": .string(deviceError.name), "description": Self.optional(message)])
    }

    func onDeviceConnected(_ type: DeviceEnum, withDeviceInfo deviceInfo: [String: String]) {
        let info = deviceInfo.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        emit("onDeviceConnected \(type.name) \(info)",
             ["callback": .string("onDeviceConnected"), "type": .string(type.name),
              "deviceInfo": .object(deviceInfo.mapValues(JSONValue.string))])
    }

    func onDeviceDisconnected(_ type: DeviceEnum) {
        emit("onDeviceDisconnected \(type.name)", ["callback": .string("onDeviceDisconnected"), "type": .string(type.name)])
    }
}
