import CardChannel
import Foundation
import PaymentGateway
import CoreAPI
import PaymentFlow
import Testing
import TestSupport

/// The device listener: `APPLE_TTP_` conditions at initialise, connected / disconnected as the
/// reader comes and goes.
@Suite struct CoreAPIDeviceTests {
    @Test(arguments: CoreDeviceEnvironment.Condition.allCases.filter { $0 != .ready })
    func appleTTPConditionsStopInitialise(_ condition: CoreDeviceEnvironment.Condition) async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir, environment: CoreDeviceEnvironment(condition: condition))
        #expect(!rig.initialised)
        #expect(!rig.core.isInitialised)
        let expected = try #require(CoreDeviceEnvironment(condition: condition).check()?.error)
        #expect(expected.isAppleTTP)
        guard case .error(let e, let message)? = rig.device.events.first else {
            Issue.record("no onDeviceError: \(rig.device.events)")
            return
        }
        #expect(e == expected)
        #expect(message?.isEmpty == false)
        // Never connected, so never disconnected either.
        #expect(rig.device.events.count == 1)
        // A sale then cannot start, and touches nothing.
        #expect(coreErrorCode(await rig.core.processSale(CoreSale(amount: 100, orderId: "o"))) == .deviceNotReady)
        #expect(rig.sales.events.count == 1)
        #expect(try rig.gateway.ledger.allPayments().isEmpty)
        // Nor is the device followed.
        await rig.core.runDeviceMonitor()
        #expect(rig.device.events.count == 1)
    }

    @Test func theConfigurationsDeviceIsTheDefaultEnvironment() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir) { config in
            config.device = DeviceEnvironment(isSupported: true, model: "iPhone9,1", osVersion: "18.0")
        }
        #expect(rig.device.errors == [.appleTTPUnsupportedModel])
    }

    @Test func aReadyDeviceConnectsOnceAtInitialise() async throws {
        let dir = TempDir()
        let rig = try await CoreRig.make(dir)
        #expect(rig.initialised)
        #expect(rig.device.events.count == 1)
        // Without a monitor there is nothing to follow.
        await rig.core.runDeviceMonitor()
        #expect(rig.device.events.count == 1)
        // Initialising again reports the device again.
        await rig.core.initialise(terminal: rig.terminal, saleListener: rig.sales, deviceListener: rig.device)
        #expect(rig.device.events.count == 2)
    }

    /// With a monitor (the CLI's is PC/SC's reader states), the callbacks follow attach and detach.
    @Test func theMonitorFollowsAttachAndDetach() async throws {
        let dir = TempDir()
        let monitor = CoreScriptedMonitor(.unavailable(.noReader, description: "no PC/SC reader is connected"))
        let rig = try await CoreRig.make(dir, monitor: monitor)
        #expect(rig.initialised)
        // No reader at initialise: the fault, no connection.
        #expect(rig.device.events == [.error(.noReader, "no PC/SC reader is connected")])

        let core = rig.core
        let following = Task { await core.runDeviceMonitor() }
        await monitor.waitForWaiter()
        // Still no reader, said otherwise: not a new error.
        monitor.set(.unavailable(.noReader, description: "no reader matches 'ACR'"))
        await monitor.waitForWaiter()
        monitor.set(.connected(info: ["reader": "ACS ACR1252 1S CL Reader PICC 00 00"]))
        await rig.device.log.waitForCount(2)
        guard case .connected(.appleTTP, let info) = rig.device.events[1] else {
            Issue.record("no onDeviceConnected: \(rig.device.events)")
            return
        }
        #expect(info["reader"] == "ACS ACR1252 1S CL Reader PICC 00 00")
        #expect(info["deviceType"] == "AppleTTP")

        await monitor.waitForWaiter()
        monitor.set(.unavailable(.readerRemoved, description: "the reader went away"))
        await rig.device.log.waitForCount(4)
        #expect(Array(rig.device.events[2...]) == [.error(.readerRemoved, "the reader went away"), .disconnected(.appleTTP)])

        await monitor.waitForWaiter()
        monitor.set(.unavailable(.serviceUnavailable, description: "pcscd stopped"))
        await rig.device.log.waitForCount(5)
        // Already disconnected: the error only.
        #expect(rig.device.events[4] == .error(.serviceUnavailable, "pcscd stopped"))

        await monitor.waitForWaiter()
        monitor.set(.connected(info: ["reader": "Virtual PCD 00 00"]))
        await rig.device.log.waitForCount(6)
        guard case .connected = rig.device.events[5] else { Issue.record("not reconnected"); return }

        following.cancel()
        await following.value
        #expect(rig.device.events.count == 6)
    }
}
