public import CodedErrors
public import Testing

/// Expects `body` to throw an `E` whose code is `code`: the one way the tests check a typed
/// error, by its code (reasons are for people and never compared). Records an issue at the
/// caller when `body` returns, throws another type, or another code (the error printed).
/// Returns the error, for what else a test checks of it.
@discardableResult
public func expectThrows<E: CodedError>(_ type: E.Type, _ code: E.Code, _ comment: String = "",
                                        sourceLocation: SourceLocation = #_sourceLocation,
                                        _ body: () async throws -> Void) async -> E? {
    do {
        try await body()
        Issue.record("expected \(E.self) \(code), nothing was thrown \(comment)", sourceLocation: sourceLocation)
        return nil
    } catch let error as E {
        #expect(error.code == code, "\(error) \(comment)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(E.self) \(code), \(error) was thrown \(comment)", sourceLocation: sourceLocation)
        return nil
    }
}
