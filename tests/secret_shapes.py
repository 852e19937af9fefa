"""Values shaped like real credentials, built at run time so that no file of this repository holds one.

A team's secret scanning (GitHub push protection, gitleaks) blocks a commit holding a string of a credential's
exact shape, placeholder or not. Tests that need such a value (to prove it is scrubbed) build it here from parts
no scanner matches; ``tests/test_secret_scanning.py`` keeps every tracked file free of the shapes.
"""

from __future__ import annotations

import string

_TAIL = string.ascii_letters + string.digits


def _tail(seed: str, length: int, alphabet: str = _TAIL) -> str:
    """``length`` characters of ``alphabet``, starting with the seed's own characters that belong to it."""
    kept = "".join(c for c in seed if c in alphabet)
    pool = kept + alphabet
    return (pool * (length // len(pool) + 1))[:length]


def google_api_key(seed: str = "") -> str:
    return "AI" + "za" + _tail(seed, 35, _TAIL + "-_")


def databricks_token(seed: str = "") -> str:
    return "da" + "pi" + _tail(seed, 32, "0123456789abcdef")


def github_token(seed: str = "") -> str:
    return "gh" + "p_" + _tail(seed, 36)


def aws_access_key_id(seed: str = "") -> str:
    return "AK" + "IA" + _tail(seed.upper(), 16, string.ascii_uppercase + string.digits)


def slack_token(seed: str = "") -> str:
    digits = _tail(seed, 12, string.digits)
    return "xo" + "xb-" + digits + "-" + digits + "-" + _tail(seed, 24)


def private_key_block(seed: str = "") -> str:
    dashes = "-" * 5
    body = _tail(seed, 64, _TAIL + "+/")
    return f"{dashes}BEGIN RSA PRIVATE KEY{dashes}\n{body}\n{dashes}END RSA PRIVATE KEY{dashes}"


SHAPES = {"gcp-api-key": google_api_key, "databricks-api-token": databricks_token, "github-pat": github_token,
          "aws-access-token": aws_access_key_id, "slack-bot-token": slack_token, "private-key": private_key_block}
"""gitleaks rule id -> a builder of a value that rule flags."""
