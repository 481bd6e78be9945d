"""An application signing people in through LiveSignup, written with Authlib's OAuth 2.0 /
OpenID Connect client (code + PKCE) and joserfc (the ID token against the published key
set): code we did not write, speaking to the provider as any framework would (issue 56).

Run by OpenIDProviderTests with the provider's issuer, a client's id and secret, its redirect
URI, and the cookie of a signed-in browser (the person's side is LiveSignup's own pages,
tested elsewhere). Prints one JSON object of what it saw; the Swift test judges it.
"""
import json
import os
import sys
import urllib.parse

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet

os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # loopback http, for the test only

issuer, client_id, secret, redirect_uri, cookie = sys.argv[1:6]
algorithm = sys.argv[6] if len(sys.argv) > 6 else "ES256"  # what the client registered
seen = {}

discovery = requests.get(issuer + "/.well-known/openid-configuration", timeout=10).json()
seen["discovery_issuer"] = discovery["issuer"]


def client():
    return OAuth2Session(client_id, secret or None, scope="openid email profile offline_access",
                         redirect_uri=redirect_uri, code_challenge_method="S256",
                         token_endpoint_auth_method="client_secret_basic" if secret else "none")


def verified_claims(id_token, nonce=None):
    """The ID token's claims, its signature checked against the key set as published now."""
    keys = KeySet.import_key_set(requests.get(discovery["jwks_uri"], timeout=10).json())
    token = jwt.decode(id_token, keys, algorithms=[algorithm])
    options = {"iss": {"essential": True, "value": issuer}, "aud": {"essential": True, "value": client_id}}
    if nonce is not None:
        options["nonce"] = {"essential": True, "value": nonce}
    jwt.JWTClaimsRegistry(**options).validate(token.claims)
    return token.header, token.claims


def sign_in(session):
    """The browser's trip: authorize with the signed-in cookie, follow the redirect back."""
    verifier = generate_token(48)
    nonce = generate_token(20)
    url, state = session.create_authorization_url(discovery["authorization_endpoint"], code_verifier=verifier, nonce=nonce)
    answer = requests.get(url, headers={"Cookie": cookie}, allow_redirects=False, timeout=10)
    location = answer.headers.get("Location", "")
    back = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
    seen.setdefault("authorize", []).append({"status": answer.status_code, "to_redirect_uri": location.startswith(redirect_uri),
                                             "iss": back.get("iss", [None])[0], "state_kept": back.get("state", [None])[0] == state})
    try:
        token = session.fetch_token(discovery["token_endpoint"], authorization_response=location, code_verifier=verifier,
                                    state=state)
    except requests.HTTPError as error:
        sys.exit(f"the token endpoint refused: {error.response.status_code} {error.response.text}")
    return token, nonce


session = client()
token, nonce = sign_in(session)
header, claims = verified_claims(token["id_token"], nonce)
seen["id_token"] = {"alg": header["alg"], "kid": header["kid"], "claims": claims}
seen["token_type"] = token["token_type"]
seen["userinfo"] = session.get(discovery["userinfo_endpoint"]).json()

# Refresh rotation: a new pair; the old refresh token, used again, revokes the family.
first_refresh = token["refresh_token"]
rotated = session.refresh_token(discovery["token_endpoint"], refresh_token=first_refresh)
seen["rotated"] = rotated["refresh_token"] != first_refresh and rotated["access_token"] != token["access_token"]
seen["rotated_id_token_sub"] = verified_claims(rotated["id_token"])[1]["sub"]
reuse = requests.post(discovery["token_endpoint"],
                      data={"grant_type": "refresh_token", "refresh_token": first_refresh, **({} if secret else {"client_id": client_id})},
                      auth=(client_id, secret) if secret else None, timeout=10)
seen["reused_refresh"] = {"status": reuse.status_code, "error": reuse.json().get("error")}
after = requests.get(discovery["userinfo_endpoint"], headers={"Authorization": "Bearer " + rotated["access_token"]}, timeout=10)
seen["family_revoked"] = after.status_code == 401

# Introspection and revocation of a fresh grant (confidential clients only introspect).
session = client()
token, _ = sign_in(session)
if secret:
    seen["introspected"] = session.introspect_token(discovery["introspection_endpoint"], token=token["access_token"]).json()
revoked = session.revoke_token(discovery["revocation_endpoint"], token=token["access_token"])
seen["revoke_status"] = revoked.status_code
after = requests.get(discovery["userinfo_endpoint"], headers={"Authorization": "Bearer " + token["access_token"]}, timeout=10)
seen["revoked_access_refused"] = after.status_code
if secret:
    seen["introspected_after"] = session.introspect_token(discovery["introspection_endpoint"], token=token["access_token"]).json()
print(json.dumps(seen))
