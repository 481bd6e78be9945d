import ReactiveValidation
#if canImport(Combine)
import Combine
#else
import OpenCombineShim
#endif
@testable import SignupDomain
import XCTest

/// An edit re-runs only the rules whose inputs changed, and the result is the same as
/// evaluating everything afresh.
final class FormEvaluationCacheTests: XCTestCase {
    func testAnEmailEditDoesNotReevaluateTheOtherFields() {
        let cache = FormEvaluationCache()
        var runs: [String] = []
        func evaluate(_ name: String, _ value: String) -> FieldEvaluation<String> {
            runs.append(name)
            return FieldEvaluation(value: value, states: [.met])
        }
        _ = cache.username.value(for: .init(value: "ada", answer: nil)) { evaluate("username", "ada") }
        _ = cache.email.value(for: .init(value: "a@example.com", answer: nil)) { evaluate("email", "a@example.com") }
        // The next edit changes the email only.
        _ = cache.username.value(for: .init(value: "ada", answer: nil)) { evaluate("username", "ada") }
        _ = cache.email.value(for: .init(value: "ad@example.com", answer: nil)) { evaluate("email", "ad@example.com") }
        XCTAssertEqual(runs, ["username", "email", "email"])
        // An availability answer for the same name is a new input for the username.
        _ = cache.username.value(for: .init(value: "ada", answer: AsyncAnswer(value: "ada", state: .met))) {
            evaluate("username", "ada")
        }
        XCTAssertEqual(runs.last, "username")
    }

    func testCachedEvaluationEqualsAFreshOne() {
        let policy = FormPolicy.classic()
        let availability = policy.usernameAvailabilityRule { _ in Empty().eraseToAnyPublisher() }
        let cache = FormEvaluationCache()
        let edits = [("ada", "a@x", "Abc", ""), ("ada", "a@example.com", "Abc", ""),
                     ("ada", "a@example.com", "Abcdefgh-472", ""), ("adam", "a@example.com", "Abcdefgh-472", "Abcdefgh-472")]
        for (username, email, password, confirm) in edits {
            let cached = policy.evaluate(username: username, email: email, password: password, confirm: confirm,
                                         availability: availability, answer: nil, shownFields: [.email], cache: cache)
            let fresh = policy.evaluate(username: username, email: email, password: password, confirm: confirm,
                                        availability: availability, answer: nil, shownFields: [.email])
            XCTAssertEqual(cached, fresh, "\(username) \(email) \(password) \(confirm)")
        }
    }
}
