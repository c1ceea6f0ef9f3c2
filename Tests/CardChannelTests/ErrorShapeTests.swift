import APDUTrace
import BERTLV
import CardChannel
import EMVKernel
import ISO7816
import Testing
import VirtualCard

/// Every layer's error has one shape (`CodedError`): equal by code alone, whatever the reason,
/// the place or the layer's details; the place where it was made kept.
@Suite("Error shape")
struct ErrorShapeTests {
    /// Two errors of one type with the same code and different reasons, details and lines; a
    /// third with another code.
    static let cases: [(name: String, same: [any Error & Hashable], other: any Error & Hashable)] = [
        ("ISO7816Error", [ISO7816Error(.badHex, "one", line: 1), ISO7816Error(.badHex, "two", line: 2)],
         ISO7816Error(.tooShort, "one", line: 1)),
        ("TLVError", [TLVError(.padding, "one", offset: 1), TLVError(.padding, "two", offset: 9)],
         TLVError(.tooDeep, "one", offset: 1)),
        ("CardChannelError", [CardChannelError(.timeout, "one", detail: "a"), CardChannelError(.timeout, "two", hint: "b")],
         CardChannelError(.traceEnded, "one", detail: "a")),
        ("TraceError", [TraceError(.badHex, "one", path: "a", lineNumber: 1), TraceError(.badHex, "two")],
         TraceError(.badLine, "one", path: "a", lineNumber: 1)),
        ("KernelError", [KernelError(.invalidAFL, step: .gpo, "one"), KernelError(.invalidAFL, step: .ppse, "two")],
         KernelError(.malformedResponse, step: .gpo, "one")),
        ("VirtualCardError", [VirtualCardError(.invalidProfile, "one"), VirtualCardError(.invalidProfile, "two")],
         VirtualCardError(.unknownProfile, "one")),
    ]

    @Test("equal and hashed by code alone; another code differs", arguments: cases.indices)
    func equalByCode(index: Int) {
        let c = Self.cases[index]
        #expect(c.same[0].hashValue == c.same[1].hashValue, "\(c.name)")
        #expect(AnyHashable(c.same[0]) == AnyHashable(c.same[1]), "\(c.name)")
        #expect(AnyHashable(c.same[0]) != AnyHashable(c.other), "\(c.name)")
    }

    @Test("the reason is for people and the place where the error was made is kept")
    func reasonAndPlace() {
        let line = #line + 1
        let error = TLVError(.trailingBytes, "bytes after the object", offset: 4)
        #expect(error.code == .trailingBytes)
        #expect(error.code.name == "trailingBytes")
        #expect(error.reason == "bytes after the object")
        #expect(error.description == "bytes after the object (at byte offset 4)")
        #expect(error.file == #fileID)
        #expect(error.line == line)
    }
}
