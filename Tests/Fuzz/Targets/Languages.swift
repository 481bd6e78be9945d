import Foundation
import SignupDomain
import WebKernel

/// The twelve languages the server speaks, loaded from Templates/i18n as the server loads them
/// (for negotiation here, and for the catalogs' texts in message-format).
let languages: Languages = {
    do {
        return try Languages(directory: FuzzResources.url("Templates/i18n"), policy: FormPolicy(.classic))
    } catch {
        fatalError("cannot load the catalogs: \(error)")
    }
}()

extension FuzzTarget {
    /// `Accept-Language` and `?lang=` (also `ui_locales`): which language a page is in.
    static let languageNegotiation = FuzzTarget(
        name: "accept-language",
        summary: "Accept-Language headers and ?lang=: Languages.preferences, negotiate, language"
    ) { input in
        let parts = input.texts(2)
        let requested = parts[0], header = parts[1]
        let served = Set(languages.all.map(\.tag))
        let chosen = languages.negotiate(requested: requested, acceptLanguage: header)
        fuzzCheck(served.contains(chosen.tag), "negotiated a language the server does not have: \(chosen.tag)")
        if let exact = languages.language(requested) {
            fuzzCheck(chosen.tag == exact.tag, "?lang= for a language the server has did not win")
            fuzzCheck(served.contains(exact.tag), "?lang= read as a language the server does not have")
        }
        let preferences = Languages.preferences(header)
        fuzzCheck(preferences.count <= 32, "more than 32 preferences kept")
        for tag in preferences {
            fuzzCheck(!tag.isEmpty && tag != "*" && header.contains(tag), "a preference that is not a tag of the header: \(tag)")
        }
        // Traditional Chinese is another script: never answered in Simplified.
        for tag in preferences where ["zh-tw", "zh-hk", "zh-mo", "zh-hant"].contains(tag.lowercased()) {
            fuzzCheck(languages.language(tag)?.tag != "zh-hans", "\(tag) answered in Simplified Chinese")
        }
    }
}
