"""The shapes of a secret that scrubbing removes from everything the harness writes (cassettes, reports, traces).

They follow the secret scanners a team's repository runs — GitHub's push protection and gitleaks' default
rules (their ids in the comments) — so that nothing recorded by this suite is blocked when the team commits it.
Every pattern is unanchored (no ``^``, ``$``, ``\\A``, ``\\Z``, lookbehind): a match in a string is a match in
any text that holds the string, which ``cassettes.could_scrub`` relies on to test many strings joined at once.
Some are wider than the scanner's rule (no word boundary, a longer tail allowed): scrubbing more than a
scanner flags is safe, less is not.
"""

from __future__ import annotations

import re

SECRET_PATTERNS: dict[str, re.Pattern[str]] = {
    "Google API key (AIza...)": re.compile(r"AIza[0-9A-Za-z_-]{30,}"),  # gitleaks gcp-api-key
    "Google OAuth access token (ya29....)": re.compile(r"ya29\.[0-9A-Za-z_-]{20,}"),
    "Databricks token (dapi...)": re.compile(r"dapi[0-9a-h]{32}(?:-\d)?"),  # databricks-api-token
    "GitHub token (ghp_...)": re.compile(r"gh[pousr]_[0-9A-Za-z]{36}"),  # github-pat, -oauth, -app-token, ...
    "GitHub fine-grained token (github_pat_...)": re.compile(r"github_pat_\w{82}"),
    "GitLab token (glpat-...)": re.compile(r"glpat-[\w-]{20}"),
    "AWS access key id (AKIA...)": re.compile(  # aws-access-token
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    "Slack token (xox...)": re.compile(r"xox[abeprs]-[0-9A-Za-z-]{10,}"),  # slack-bot-token, ...
    # The whole block when its end is there, else the header alone (a block cut short in a preview).
    "private key (-----BEGIN ... PRIVATE KEY-----)": re.compile(  # private-key
        r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)?"),
    "bearer token (Bearer ...)": re.compile(r"Bearer\s+[A-Za-z0-9._~+/=-]{20,}"),
}
