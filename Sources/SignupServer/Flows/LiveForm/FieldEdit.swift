import FormWire
import MicroHTTPD
import SignupDomain
import SignupWire
import WebKernel

/// One `POST /fields` body, read: which form, which field (or the credential chosen), the
/// value, its sequence number. Everything a stranger's bytes decide is checked here, before a
/// session is looked up; a fuzz target (Tests/Fuzz) reads bodies with the same function.
package struct FieldEdit: Equatable {
    package enum Change: Equatable {
        case value(SignupField, String)
        case credential(CredentialMethod)
    }

    package let token: String
    package let change: Change
    package let seq: UInt64
    package let touched: Bool

    /// `queryToken`: the `token` in the URL, which a proxy may route by; if the body has one
    /// too they must agree.
    package static func read(_ form: URLEncodedForm, queryToken: String?, policy: FormPolicy) throws(APIError) -> FieldEdit {
        let bodyToken = form["token"]
        if let queryToken, let bodyToken, queryToken != bodyToken {
            throw APIError(status: .badRequest, code: "token_mismatch",
                           message: "The token in the URL and the token in the body differ; send one token.")
        }
        guard let token = bodyToken ?? queryToken else { throw APIError.missingParameter("token") }
        guard let fieldName = form["field"] else { throw APIError.missingParameter("field") }
        guard let value = form["value"] else { throw APIError.missingParameter("value") }
        guard let seqText = form["seq"] else { throw APIError.missingParameter("seq") }
        // A field's value, or the credential the person chose (password or passkey).
        let change: Change
        if fieldName == CredentialMethod.fieldName {
            guard let method = CredentialMethod(rawValue: value) else {
                let known = CredentialMethod.allCases.map(\.rawValue).joined(separator: " or ")
                throw APIError(status: .badRequest, code: "invalid_credential",
                               message: "The credential must be \(known), not '\(value)'.")
            }
            change = .credential(method)
        } else {
            guard let named = policy.field(named: fieldName) else {
                let known = (policy.fieldOrder.map(\.rawValue) + [CredentialMethod.fieldName]).joined(separator: ", ")
                throw APIError(status: .badRequest, code: "unknown_field",
                               message: "Unknown field '\(fieldName)'. Expected one of: \(known).")
            }
            change = .value(named, value)
        }
        guard let seq = UInt64(seqText) else {
            throw APIError(status: .badRequest, code: "invalid_seq",
                           message: "'seq' must be a non-negative whole number, counting up with each edit of a field.")
        }
        return FieldEdit(token: token, change: change, seq: seq,
                         touched: form["touched"].map { $0 == "1" || $0 == "true" } ?? false)
    }
}
