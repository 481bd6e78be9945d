import MicroHTTPD

/// A refusal a handler throws rather than answers (as Hummingbird's handlers throw an
/// `HTTPResponseError`): the router renders it as the row answers, the problem page in the
/// request's language where a person is looking, else the JSON error with the same sentence.
/// A handler says only what was refused; how it looks is the kernel's, once.
///
/// What the router renders, by what a handler threw (`Router.answer(thrown:)`):
/// - `Refused`: as here, in the row's form;
/// - `APIError`: its JSON (the script's endpoints' own refusals, which no person reads);
/// - `LimitExceeded`: the row's 429, counted under its limit (a 503 when the shared count
///   could not be read: a limit that guards guesses fails closed);
/// - anything else: the account store's error, the one 503, logged.
package struct Refused: Error, Sendable {
    package let status: HTTPStatus
    /// `data-problem` on the page, `error` in the JSON.
    package let code: String
    /// Catalog keys: the page's heading, and the sentence both forms say.
    package let title: String
    package let message: String
    /// Seconds until a retry can succeed (`Retry-After`), if it says.
    package var retryAfter: Int?
    /// More headers (a cookie the refusal still ends).
    package var headers: HTTPHeaders

    package init(status: HTTPStatus, code: String, title: String, message: String, retryAfter: Int? = nil,
                 headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.title = title
        self.message = message
        self.retryAfter = retryAfter
        self.headers = headers
    }

    /// 503: the account store could not serve the request; try again in `retryAfter` seconds.
    /// - Parameter message: the catalog key of the sentence (`signin.unavailable` on sign-out).
    package static func unavailable(retryAfter: Int = 5, message: String = "error.unavailable",
                                    headers: HTTPHeaders = HTTPHeaders()) -> Refused {
        Refused(status: .serviceUnavailable, code: "unavailable", title: "problem.unavailable_title", message: message,
                retryAfter: retryAfter, headers: headers)
    }

    /// 401: no one is signed in in this browser (a JSON row's answer; a page row sends the
    /// person to sign in, `RequestContext.forAccount`).
    package static let signedOut = Refused(status: .unauthorized, code: "signed_out", title: "problem.refused_title",
                                           message: "passkey.error.signed_out")

    /// The answer for `request`, in its row's form and language.
    package func answer(_ request: RequestContext) -> HTTPResponse {
        guard request.answers == .page else {
            var response = APIError(status: status, code: code, message: request.text(message), retryAfter: retryAfter).response
            for (name, value) in headers { response.headers.add(name, value) }
            return response
        }
        var all = HTTPHeaders()
        if let retryAfter { all.add("Retry-After", String(retryAfter)) }
        for (name, value) in headers { all.add(name, value) }
        return request.pages.problem(title: request.text(title), message: request.text(message), code: code, status: status,
                                     headers: all)
    }
}
