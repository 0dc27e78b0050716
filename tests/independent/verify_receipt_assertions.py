#!/usr/bin/env python3
"""Checks the passkey assertions of a tool-contract approval receipt with Python's
`cryptography` alone: no Rust, no webauthn-rs. An independent reading of the same bytes.

    python3 tests/independent/verify_receipt_assertions.py APPROVER-KEYS.json RECEIPT.json

For each approval signed by a passkey it recomputes the approval statement from the receipt
(RFC 8785: for these string-and-null members, keys sorted, no spaces), checks that the client
data is a `webauthn.get` for the relying party's origin whose challenge is the statement's
SHA-256, that the authenticator data's RP ID hash is the relying party's, that the user was
present and verified, and the ECDSA P-256 signature over the authenticator data and the client
data's SHA-256 with the approver's published JWK (W3C WebAuthn Level 3 §7.2). It does not
check the service's Ed25519 signature over the receipt: `tool-contract-verify-receipt` does.
Exits 0 when every assertion verifies, 1 otherwise.
"""

import base64
import hashlib
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def statement(receipt, approval):
    members = {
        "approval_id": receipt["approval_id"],
        "approver_id": approval["approver"],
        "decision": "approve",
        "domain": "tool-contract/approval-statement-v1",
        "edited_arguments_sha256": receipt.get("edited_arguments_sha256"),
        "expires_at": approval["expires_at"],
        "preview_sha256": receipt["preview_sha256"],
        "principal_ref": receipt["principal_ref"],
        "request_sha256": receipt["request_sha256"],
        "tool": receipt["tool"],
    }
    # RFC 8785 for an object of ASCII strings and nulls: sorted keys, no whitespace.
    return json.dumps(members, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def public_key(jwk):
    if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
        raise ValueError("this check reads P-256 keys only")
    x = int.from_bytes(b64url(jwk["x"]), "big")
    y = int.from_bytes(b64url(jwk["y"]), "big")
    return ec.EllipticCurvePublicNumbers(x, y, ec.SECP256R1()).public_key()


def check(approvers, receipt, approval):
    assertion = approval["assertion"]
    party = approvers["relying_party"]
    published = [
        credential
        for approver in approvers["approvers"]
        if approver["approver_id"] == approval["approver"]
        for credential in approver["credentials"]
        if credential["credential_id"] == assertion["credential_id"]
    ]
    if not published:
        return "no published credential of theirs signed"
    client_data_bytes = b64url(assertion["client_data_json"])
    client_data = json.loads(client_data_bytes)
    challenge = hashlib.sha256(statement(receipt, approval)).digest()
    if client_data.get("type") != "webauthn.get":
        return "not an assertion"
    if b64url(client_data.get("challenge", "")) != challenge:
        return "the challenge is not the statement's digest"
    if client_data.get("origin") not in party["origins"]:
        return "another origin"
    authenticator_data = b64url(assertion["authenticator_data"])
    if authenticator_data[:32] != hashlib.sha256(party["id"].encode()).digest():
        return "another relying party"
    flags = authenticator_data[32]
    if not flags & 0x01 or not flags & 0x04:
        return "the user was not present and verified"
    signed = authenticator_data + hashlib.sha256(client_data_bytes).digest()
    try:
        public_key(published[0]["public_key"]).verify(
            b64url(assertion["signature"]), signed, ec.ECDSA(hashes.SHA256())
        )
    except InvalidSignature:
        return "the signature does not verify"
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as file:
        approvers = json.load(file)
    with open(sys.argv[2], "rb") as file:
        receipt = json.load(file)["receipt"]
    signed = [approval for approval in receipt["approvals"] if approval.get("basis") == "passkey"]
    failed = False
    for approval in signed:
        refusal = check(approvers, receipt, approval)
        verdict = "verified" if refusal is None else f"refused: {refusal}"
        failed |= refusal is not None
        print(f"{approval['approver']}: {verdict}")
    if not signed:
        print("no passkey approval in this receipt")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
