import CombineSchedulers
import Foundation
import MicroHTTPD
import OpenCombineShim
import ReactiveValidation
import SignupDomain
import SignupServer
import SignupWire
import WebKernel

/// The policy every edit is read against: built once (it loads word lists), read only.
private let policy = FormPolicy(.classic)
/// Every English text, as one string: what the page may say whatever was typed.
private let catalogText = TextCatalog.builtInEnglish.texts.values.joined(separator: "\n")

/// Every name free, answered at once: the look-up is not what is fuzzed here.
private struct NoNameTaken: UsernameAvailabilityChecking {
    func availability(of username: String) -> AnyPublisher<RequirementState, Never> { Just(.met).eraseToAnyPublisher() }
}

extension FuzzTarget {
    /// `POST /fields`: the body read into an edit, then given to a fresh view model, as the
    /// server does for every keystroke.
    static let fieldEdit = FuzzTarget(
        name: "field-edit",
        summary: "POST /fields bodies: FieldEdit.read, then the view model's evaluation"
    ) { input in
        let request = HTTPRequest(method: "POST", path: "/fields",
                                  headers: HTTPHeaders([("Content-Type", "application/x-www-form-urlencoded")]),
                                  body: input.bytes)
        guard let form = try? decodeForm(request) else { return }
        let edit: FieldEdit
        do throws(APIError) {
            edit = try FieldEdit.read(form, queryToken: nil, policy: policy)
        } catch {
            // Refused readably: a 400 with a code, never anything else.
            fuzzCheck(error.status == .badRequest && !error.code.isEmpty, "an edit refused with \(error.status) \(error.code)")
            return
        }
        guard case .value(let field, let value) = edit.change else { return }
        let model = SignupViewModel(policy: policy, availabilityChecker: NoNameTaken(),
                                    scheduler: DispatchQueue.immediate.eraseToAnyScheduler())
        model.setValue(value, for: field)
        fuzzCheck(model.value(of: field) == value, "the view model did not keep the value it was given")
        // A password is never said back: not in the snapshot, not in any event. (A value
        // that is part of a text anyway, "password" in "The password is too short", is no
        // evidence either way.)
        if field.isSecret, value.utf8.count >= 8, !catalogText.contains(value) {
            let evaluation = model.form
            let said = evaluation.snapshot(rev: 1).messages.values.joined()
                + evaluation.changes(since: policy.initialEvaluation, rev: 1, policy: policy).map(\.data).joined()
            fuzzCheck(!said.contains(value), "a secret field's value came back in what the page is told")
        }
    }
}
