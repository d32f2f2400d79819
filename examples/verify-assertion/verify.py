#!/usr/bin/env python3
"""Verify Gatehouse's signed identity assertion (X-Gatehouse-Jwt-Assertion)
with PyJWT (pip install "pyjwt[crypto]", or Debian's python3-jwt).

    from verify import verify
    identity = verify(request.headers["X-Gatehouse-Jwt-Assertion"])

Run as a script to check one token:
    verify.py TOKEN JWKS_URL ISSUER AUDIENCE   (prints the claims as JSON)
"""
import json
import sys

import jwt

_clients = {}


def verify(token, jwks_url, issuer, audience):
    """Return the claims of a valid assertion; raise jwt.PyJWTError otherwise.

    ES256 only; the kid must be in Gatehouse's JWKS (PyJWKClient caches the
    set and fetches it again for an unknown kid, as after a key rotation);
    iss, aud, exp and nbf are checked, with one minute of leeway.
    """
    client = _clients.get(jwks_url)
    if client is None:
        client = _clients[jwks_url] = jwt.PyJWKClient(jwks_url)
    key = client.get_signing_key_from_jwt(token).key
    claims = jwt.decode(
        token,
        key,
        algorithms=["ES256"],
        audience=audience,
        issuer=issuer,
        leeway=60,
        options={"require": ["exp", "iat", "iss", "aud", "sub"]},
    )
    return claims


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    try:
        print(json.dumps(verify(*sys.argv[1:])))
    except jwt.PyJWTError as e:
        print("invalid assertion: %s" % e, file=sys.stderr)
        sys.exit(1)
