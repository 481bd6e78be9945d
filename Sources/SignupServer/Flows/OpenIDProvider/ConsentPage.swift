import SignupDomain
import WebKernel

/// The page that asks a person whether an application that is not the operator's own may
/// sign them in, and says what it will learn (issue 56). The answer is posted with the
/// request it answers, which `POST /oauth2/consent` reads and checks again from the start.
struct ConsentPage: PageView {
    static let template = "consent"
    var client: ClientDeclaration
    var username: String
    var scopes: [String]
    /// The authorization request's query, as the consent's post carries it back.
    var request: String

    func fill(_ context: inout PageContext) {
        let text = context.text
        let title = text("consent.title", ["client": .name(client.name)])
        context["pageTitle"] = title
        context["headingHTML"] = text.html("consent.title", ["client": .name(client.name)])
        context["leadHTML"] = text.html("consent.lead", ["username": .name(username), "client": .name(client.name)])
        context["clientID"] = client.id
        context["scopes"] = scopes.map { ["scope": $0, "text": text("consent.scope.\($0)")] }
        context["request"] = request
    }
}
