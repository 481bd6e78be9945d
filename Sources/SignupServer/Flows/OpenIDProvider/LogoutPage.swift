import WebKernel

/// RP-initiated logout's page (issue 56): the question, when the request alone cannot be
/// trusted to sign the person out (a link anyone could send), or the answer, when there is
/// nowhere registered to go back to.
struct LogoutPage: PageView {
    static let template = "logout"
    /// Signed out already: "You are signed out."
    var done: Bool
    /// The request's parameters the confirmation posts back (`post_logout_redirect_uri`,
    /// `state`, `client_id`).
    var fields: [(name: String, value: String)] = []

    func fill(_ context: inout PageContext) {
        context["pageTitle"] = context.text("logout.title")
        context["done"] = done
        context["fields"] = fields.map { ["name": $0.name, "value": $0.value] }
    }
}
