import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// How every concern refuses a request over a limit: one count in the metric by the limit's
/// name, one debug line, and for the script's endpoints the JSON 429.
package struct Refusals: Sendable {
    /// Counts a refusal under its limit (`livesignup_rate_limited_total{limit=…}`).
    package let countLimited: @Sendable (RateLimitName) -> Void
    package let logger: Logger

    package init(countLimited: @escaping @Sendable (RateLimitName) -> Void, logger: Logger) {
        self.countLimited = countLimited
        self.logger = logger
    }

    /// 503 for a request the account store could not serve (`RequestContext.storeUnavailable`:
    /// a page or JSON as its row answers), the cause logged with the path.
    package func storeUnavailable(_ request: RequestContext, _ error: (any Error)? = nil) -> HTTPResponse {
        if let error {
            logger.error("Account store unavailable", metadata: ["path": "\(request.http.path)", "error": "\(error)"])
        }
        return request.storeUnavailable()
    }

    /// Counts a refusal over `exceeded`'s limit; every 429 goes through here.
    package func count(_ exceeded: LimitExceeded) {
        countLimited(exceeded.limit)
        logger.debug("Rate limited", metadata: ["limit": "\(exceeded.limit)"])
    }

    /// The page 429 where a person is looking ("Slow down… try again in N seconds"), counted.
    package func slowDownPage(_ exceeded: LimitExceeded, in pages: Pages) -> HTTPResponse {
        count(exceeded)
        let message = pages.text("problem.slow_message", ["wait": .text(pages.waitPhrase(exceeded.retryAfterSeconds))])
        return pages.problem(title: pages.text("problem.slow_title"), message: message, code: "rate_limited",
                             linkText: pages.text("problem.slow_link"), status: .tooManyRequests,
                             headers: HTTPHeaders([("Retry-After", String(exceeded.retryAfterSeconds))]))
    }

    /// The JSON 429 for the script's endpoints, counted.
    package func limited(_ exceeded: LimitExceeded) -> HTTPResponse {
        count(exceeded)
        return APIError.rateLimited(exceeded).response
    }
}

/// The request's urlencoded body, or the error that says what is wrong with it.
package func decodeForm(_ request: HTTPRequest) throws(APIError) -> URLEncodedForm {
    guard request.hasMediaType("application/x-www-form-urlencoded") else {
        throw APIError(status: .unsupportedMediaType, code: "unsupported_media_type",
                       message: "Send the form as application/x-www-form-urlencoded.")
    }
    do {
        return try URLEncodedForm(decoding: request.body)
    } catch {
        throw APIError(status: .badRequest, code: "invalid_form", message: error.description)
    }
}
