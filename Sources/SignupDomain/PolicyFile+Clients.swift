import Foundation
import Yams

extension PolicyFileReader {
    /// `clients`: the applications LiveSignup is the OpenID provider of (issue 56).
    func readClients(_ node: Node) throws(PolicyFileError) -> [ClientDeclaration] {
        guard let sequence = node.sequence else {
            throw fail(node, "'clients' must be a list of applications, each with id, name, redirect_uris, and client_secret_env or public: true")
        }
        var clients: [ClientDeclaration] = []
        for item in sequence {
            let entry = try settings(item, at: "clients", known: [
                "id", "name", "redirect_uris", "post_logout_redirect_uris", "scopes", "first_party", "client_secret_env",
                "public", "backchannel_logout_uri", "id_token_signed_response_alg",
            ])
            for required in ["id", "name", "redirect_uris"] where entry[required] == nil {
                throw fail(item, "a client needs '\(required)'")
            }
            let id = try string(entry["id"]!.value, "clients.id")
            guard ClientDeclaration.isValidID(id) else {
                throw fail(entry["id"]!.value, "a client's 'id' must be 1 to 64 of A-Z, a-z, 0-9, '.', '-' and '_' (it is sent in URLs), not '\(id)'")
            }
            guard !clients.contains(where: { $0.id == id }) else {
                throw fail(entry["id"]!.value, "the client id '\(id)' is given twice")
            }
            let path = "clients.\(id)"
            let name = try string(entry["name"]!.value, "\(path).name")
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 60 else {
                throw fail(entry["name"]!.value, "'\(path).name' must be 1 to 60 characters (people read it on the consent page)")
            }
            var client = ClientDeclaration(id: id, name: name, redirectURIs: try uris(entry["redirect_uris"]!.value, "\(path).redirect_uris"))
            guard !client.redirectURIs.isEmpty else {
                throw fail(entry["redirect_uris"]!.value, "'\(path).redirect_uris' must list at least one URI")
            }
            if let uris = entry["post_logout_redirect_uris"] {
                client.postLogoutRedirectURIs = try self.uris(uris.value, "\(path).post_logout_redirect_uris")
            }
            if let scopes = entry["scopes"] {
                client.scopes = try strings(scopes.value, "\(path).scopes")
                guard client.scopes.contains("openid") else {
                    throw fail(scopes.value, "'\(path).scopes' must include openid (it is OpenID Connect)")
                }
                if let unknown = client.scopes.first(where: { !ClientDeclaration.supportedScopes.contains($0) }) {
                    throw fail(scopes.value, "'\(path).scopes' may list \(ClientDeclaration.supportedScopes.joined(separator: ", ")), not '\(unknown)'")
                }
            }
            if let firstParty = entry["first_party"] {
                client.firstParty = try boolean(firstParty.value, "\(path).first_party")
            }
            let isPublic = try entry["public"].map { (entry) throws(PolicyFileError) in try boolean(entry.value, "\(path).public") } ?? false
            switch (entry["client_secret_env"], isPublic) {
            case (let variable?, false):
                let name = try string(variable.value, "\(path).client_secret_env")
                guard name.wholeMatch(of: #/[A-Z_][A-Z0-9_]*/#) != nil else {
                    throw fail(variable.value, "'\(path).client_secret_env' names an environment variable (A-Z, 0-9, '_'), not '\(name)'; the secret itself never goes in the file")
                }
                client.secretVariable = name
            case (nil, true):
                break
            case (let variable?, true):
                throw fail(variable.key, "'\(path)' is public (no secret, PKCE instead) or has client_secret_env, not both")
            case (nil, false):
                throw fail(item, "'\(path)' needs client_secret_env (the variable its secret is read from), or public: true for an application that cannot keep a secret")
            }
            if let logout = entry["backchannel_logout_uri"] {
                let uri = try string(logout.value, "\(path).backchannel_logout_uri")
                if let problem = ClientDeclaration.problem(withRedirectURI: uri) {
                    throw fail(logout.value, "'\(path).backchannel_logout_uri' \(problem), not '\(uri)'")
                }
                client.backchannelLogoutURI = uri
            }
            if let algorithm = entry["id_token_signed_response_alg"] {
                let name = try string(algorithm.value, "\(path).id_token_signed_response_alg")
                guard ["ES256", "RS256"].contains(name) else {
                    throw fail(algorithm.value, "'\(path).id_token_signed_response_alg' must be ES256 or RS256, not '\(name)'")
                }
                client.idTokenAlgorithm = name
            }
            clients.append(client)
        }
        return clients
    }

    /// A list of redirect URIs, each one a client may register.
    private func uris(_ node: Node, _ path: String) throws(PolicyFileError) -> [String] {
        let uris = try strings(node, path)
        for uri in uris {
            if let problem = ClientDeclaration.problem(withRedirectURI: uri) {
                throw fail(node, "'\(path)': '\(uri.prefix(80))' \(problem)")
            }
        }
        return uris
    }
}
