import OpenIDConnect
import SignupDomain

/// One OpenID provider as this server uses it: the operator's declaration and its client.
package struct ConfiguredProvider: Sendable {
    package let declaration: ProviderDeclaration
    package let client: OpenIDProvider

    package init(declaration: ProviderDeclaration, client: OpenIDProvider) {
        self.declaration = declaration
        self.client = client
    }
    package var id: String { declaration.id }
    package var name: String { declaration.name }
}
