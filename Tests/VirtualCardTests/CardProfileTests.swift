import BERTLV
import Foundation
import ISO7816
import Testing
import VirtualCard

@Suite("Card profiles as data: JSON files, errors, copies")
struct CardProfileTests {
    static let minimal = #"""
    {
      "name": "mine",
      "summary": "a user card",
      "issuerMasterKey": "0123456789ABCDEFFEDCBA9876543210",
      "applications": [{
        "aid": "A0000000031010", "label": "MY VISA", "aip": "0000", "afl": "08010100",
        "pdol": "9F02069F3704", "cryptogram": "gpo", "pan": "4111111111111111", "issuerApplicationData": "06011203A00000",
        "records": [{"sfi": 1, "record": 1, "objects": [{"tag": "5A", "hex": "4111111111111111"}, {"tag": "5F20", "text": "ME/MYSELF"}]}]
      }]
    }
    """#

    @Test("every built-in profile survives a JSON round trip")
    func roundTrip() throws {
        for p in CardProfiles.all {
            let again = try CardProfile.decode(jsonText: p.jsonText)
            #expect(again == p, "\(p.name)")
        }
        // Copies with behaviour too.
        let p = CardProfiles.named("visa-qvsdc")!.withTear(afterExchange: 4).withMute(atExchange: 9)
            .withCardTime(.milliseconds(12.5)).withScriptedResponse(commandPrefix: [0x80, 0xA8], response: [0x69, 0x85])
        #expect(try CardProfile.decode(jsonText: p.jsonText) == p)
    }

    @Test("a user profile file loads, with defaults for what it leaves out, and makes a working card")
    func loadFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("cards-test-\(UInt64.random(in: 0...UInt64.max)).json").path
        try Self.minimal.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = try CardProfile.load(contentsOf: path)
        #expect(p.name == "mine" && p.hasPPSE && p.atc == 0 && p.behaviour == CardBehaviour())
        #expect(p.applications[0].gpoFormat == .format2 && p.applications[0].panSequenceNumber == 0)
        #expect(p.applications[0].records[0].objects[1] == CardDataObject(0x5F20, text: "ME/MYSELF"))
        let t = Terminal(p)
        #expect(try t.send(.selectPPSE).statusWord == .success)
        #expect(try t.send(.select(name: p.applications[0].aid)).statusWord == .success)
        #expect(try t.gpo(p.applications[0]).statusWord == .success)
        #expect(try t.send(.readRecord(1, sfi: 1)).statusWord == .success)
    }

    @Test("a missing file is unreadableFile")
    func missingFile() {
        #expect(throws: VirtualCardError.self) { try CardProfile.load(contentsOf: "/nonexistent/card.json") }
        do {
            _ = try CardProfile.load(contentsOf: "/nonexistent/card.json")
        } catch {
            #expect(error.code == .unreadableFile)
        }
    }

    static func variant(_ edit: (inout [String: Any]) -> Void) -> String {
        var object = try! JSONSerialization.jsonObject(with: Data(minimal.utf8)) as! [String: Any]
        edit(&object)
        return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func app(_ edit: @escaping (inout [String: Any]) -> Void) -> String {
        variant { o in
            var apps = o["applications"] as! [[String: Any]]
            edit(&apps[0])
            o["applications"] = apps
        }
    }

    static let badCases: [(String, String, VirtualCardError.Code)] = [
        ("empty", "", .malformedJSON),
        ("not JSON", "{name: visa", .malformedJSON),
        ("an array", "[]", .invalidProfile),
        ("missing name", variant { $0["name"] = nil }, .invalidProfile),
        ("missing applications", variant { $0["applications"] = nil }, .invalidProfile),
        ("misspelt field", variant { $0["ppes"] = false }, .invalidProfile),
        ("name of the wrong type", variant { $0["name"] = 7 }, .invalidProfile),
        ("key not hex", variant { $0["issuerMasterKey"] = "01234G" }, .invalidProfile),
        ("key too short", variant { $0["issuerMasterKey"] = "0123456789ABCDEF" }, .inconsistentProfile),
        ("ATC too large", variant { $0["atc"] = 70000 }, .invalidProfile),
        ("ATC not whole", variant { $0["atc"] = 1.5 }, .invalidProfile),
        ("huge number", variant { $0["atc"] = 1e300 }, .invalidProfile),
        ("record without a number", app {
            $0["records"] = [["sfi": 1, "objects": []]]
        }, .invalidProfile),
        ("behaviour field misspelt", variant { $0["behaviour"] = ["tearAfter": 3] }, .invalidProfile),
        ("negative card time", variant { $0["behaviour"] = ["cardTimeMs": -5] }, .invalidProfile),
        ("bad instruction key", variant { $0["behaviour"] = ["cardTimeMsByInstruction": ["A8A8": 5]] }, .invalidProfile),
        ("mute at exchange 0", variant { $0["behaviour"] = ["muteAtExchange": 0] }, .inconsistentProfile),
        ("no applications", variant { $0["applications"] = [] }, .inconsistentProfile),
        ("PAN fails Luhn", app { $0["pan"] = "4111111111111112" }, .inconsistentProfile),
        ("PAN not digits", app { $0["pan"] = "41111111111111x1" }, .invalidProfile),
        ("PSN over 99", app { $0["panSequenceNumber"] = 100 }, .invalidProfile),
        ("AID too short", app { $0["aid"] = "A000" }, .inconsistentProfile),
        ("AIP of 3 bytes", app { $0["aip"] = "000000" }, .inconsistentProfile),
        ("PDOL does not parse", app { $0["pdol"] = "9F" }, .inconsistentProfile),
        ("AFL names a missing record", app { $0["afl"] = "08010200" }, .inconsistentProfile),
        ("AFL entry malformed", app { $0["afl"] = "08020100" }, .inconsistentProfile),
        ("AFL not 4 bytes per entry", app { $0["afl"] = "080101" }, .inconsistentProfile),
        ("GENERATE AC without CDOL1", app { $0["cryptogram"] = "generateAC" }, .inconsistentProfile),
        ("unknown cryptogram source", app { $0["cryptogram"] = "magic" }, .invalidProfile),
        ("format 1 with the cryptogram in GPO", app { $0["gpoFormat"] = 1 }, .inconsistentProfile),
        ("format 3", app { $0["gpoFormat"] = 3 }, .invalidProfile),
        ("5A differs from the PAN", app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": [["tag": "5A", "hex": "4761739001010010"]]]]
        }, .inconsistentProfile),
        ("57 differs from the PAN", app {
            $0["gpoObjects"] = [["tag": "57", "hex": "4761739001010010D28122011000012345"]]
        }, .inconsistentProfile),
        ("object with two values", app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": [["tag": "5F20", "hex": "41", "text": "A"]]]]
        }, .invalidProfile),
        ("objects under a primitive tag", app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": [["tag": "5F20", "objects": []]]]]
        }, .invalidProfile),
        ("bad tag", app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": [["tag": "9F", "hex": "00"]]]]
        }, .invalidProfile),
        ("record SFI 31", app {
            $0["afl"] = ""
            $0["records"] = [["sfi": 31, "record": 1, "objects": []]]
        }, .inconsistentProfile),
        ("duplicate record", app {
            $0["records"] = [["sfi": 1, "record": 1, "objects": []], ["sfi": 1, "record": 1, "objects": []]]
        }, .inconsistentProfile),
    ]

    @Test("bad profiles are typed errors, never crashes", arguments: badCases.indices)
    func badProfile(index: Int) {
        let (label, json, code) = Self.badCases[index]
        do {
            let p = try CardProfile.decode(jsonText: json)
            Issue.record("\(label): loaded \(p.name)")
        } catch {
            #expect(error.code == code, "\(label): \(error.reason)")
            #expect(!error.reason.contains("4111111111111111"), "\(label): the reason shows a full PAN")
        }
    }

    @Test("unknown built-in name")
    func unknownName() throws {
        #expect(CardProfiles.named("nope") == nil)
        do {
            _ = try CardProfiles.profile(named: "nope")
            Issue.record("no error")
        } catch {
            #expect(error.code == .unknownProfile)
            #expect(error.reason.contains("visa-qvsdc"))
        }
        #expect(try CardProfiles.profile(named: "amex").name == "amex")
    }

    @Test("issuer keys by PAN for the emulated issuer")
    func issuerKeys() {
        for p in CardProfiles.all {
            for app in p.applications {
                #expect(CardProfiles.issuerMasterKey(forPANDigits: app.pan.digits) == p.issuerMasterKey)
            }
        }
        #expect(CardProfiles.issuerMasterKey(forPANDigits: "4000000000000002") == nil)
    }

    @Test("an unvalidated profile built in code still never traps")
    func unvalidated() {
        var p = CardProfiles.named("mastercard-mchip")!
        p.applications[0].pdol = [0x9F]
        p.applications[0].cdol1 = [0xFF]
        p.issuerMasterKey = [1]
        let card = EmulatedCard(profile: p)
        _ = card.process(CommandAPDU.select(name: p.applications[0].aid).bytes)
        #expect(card.process(CommandAPDU.getProcessingOptions(pdolData: []).bytes).responseBytes == [0x6F, 0x00])
    }
}
