import Foundation
import Logging
import MicroHTTPD
import SignupDomain

/// What every handler that answers a person with a page shares: the renderer, the assets, the
/// languages, and a language: English in the router's, the visitor's in the one a speaking
/// request carries (`RequestContext.pages`). A class: every request holds one, and a reference
/// is one retain where the struct's fields were one each.
package final class Pages: Sendable {
    package let renderer: PageRenderer
    package let assets: StaticAssets
    package let languages: Languages
    package let language: Languages.Language

    package init(renderer: PageRenderer, assets: StaticAssets, languages: Languages, language: Languages.Language) {
        self.renderer = renderer
        self.assets = assets
        self.languages = languages
        self.language = language
    }

    /// The same pages in `language`.
    package func speaking(_ language: Languages.Language) -> Pages {
        Pages(renderer: renderer, assets: assets, languages: languages, language: language)
    }

    /// `requested` (`?lang=`, a form's `lang` field), else `Accept-Language`, else English.
    package func visitorLanguage(_ request: HTTPRequest, requested: String?) -> Languages.Language {
        languages.negotiate(requested: requested, acceptLanguage: request.headers["accept-language"])
    }

    /// A text of the request's language (English's when it lacks one).
    package func text(_ key: String) -> String {
        language.text(key, service: renderer.serviceName)
    }

    /// A text of the request's language filled in by its own rules: a count chooses the
    /// plural form the language has for it (`MessageFormat`).
    package func text(_ key: String, _ values: [String: MessageValue]) -> String {
        language.text(key, values, service: renderer.serviceName)
    }

    /// "2 seconds", "a minute" in the request's language (as `APIError.wait` in English).
    package func waitPhrase(_ seconds: Int) -> String {
        if seconds <= 1 { return text("wait.second") }
        if seconds < 60 { return text("wait.seconds", ["n": .number(seconds)]) }
        let minutes = (seconds + 59) / 60
        return minutes == 1 ? text("wait.minute") : text("wait.minutes", ["n": .number(minutes)])
    }

    /// A problem page (429, 403, restarting) in the request's language.
    package func problem(title: String, message: String, code: String, linkURL: String = "/", linkText: String? = nil,
                 status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        // Its language said here too: the router's refusals before a handler (403 cross-site,
        // 429 per address, 503 restarting) never pass where a handler's pages get it.
        var headers = headers
        if headers["Content-Language"] == nil { headers.add("Content-Language", language.tag) }
        return Self.html(renderer.render(ProblemPage(title: title, message: message, code: code, linkURL: linkURL, linkText: linkText),
                                                language: language, assets: assets),
                         status: status, headers: headers)
    }

    /// An HTML page that is never cached (each carries its own form session or user).
    package static func html(_ body: String, status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var response = HTTPResponse.html(body, status: status)
        for (name, value) in headers { response.headers.add(name, value) }
        response.headers.add("Cache-Control", "no-store")
        response.headers.add("X-Content-Type-Options", "nosniff")
        response.headers.add("Referrer-Policy", "same-origin")
        response.headers.add("Content-Security-Policy",
                             "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
        return response
    }

    /// `303 See Other` to `location`, optionally setting cookies.
    package static func redirect(to location: String, cookies: [String] = []) -> HTTPResponse {
        var headers = HTTPHeaders([("Location", location), ("Cache-Control", "no-store")])
        for cookie in cookies { headers.add("Set-Cookie", cookie) }
        return HTTPResponse(status: .seeOther, headers: headers)
    }
}
