import DeviceStore
import PaymentGateway
import Storage
import Testing

/// The storage's failures reach the ledger's and the device store's callers with their meaning:
/// one rule (`StorageFailure`) for both stores, each naming its own damaged file.
@Suite struct StorageFailureMappingTests {
    @Test(arguments: [
        (StorageError.Code.storage, GatewayError.Code.storage, DeviceStoreError.Code.storage),
        (.busy, .busy, .busy),
        (.corrupt, .corruptLedger, .corruptStore),
        (.readOnlyStorage, .readOnlyStorage, .readOnlyStorage),
        (.noDataDirectory, .noDataDirectory, .noDataDirectory),
        (.storeMissing, .storeMissing, .storeMissing),
        // A storage code the stores have no name for is a storage failure, never a code of its own.
        (StorageError.Code("someFutureCode"), .storage, .storage),
    ])
    func keepsTheMeaning(storage: StorageError.Code, ledger: GatewayError.Code, device: DeviceStoreError.Code) {
        let failure = StorageError(storage, "the file is locked")
        #expect(GatewayError(failure).code == ledger)
        #expect(DeviceStoreError(failure).code == device)
        #expect(GatewayError(failure).reason == "the file is locked")
        #expect(DeviceStoreError(failure).line == failure.line)
    }
}
