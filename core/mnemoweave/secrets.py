"""Secret detection for everything mnemoweave writes: `redact` replaces each secret with a
`[REDACTED:<kind>]` marker and keeps the rest of the text.

Two layers, in this order:

1. Our rules (`RULES`), for what the library below does not know, or misses in chat and
   shell text: key names in `.env` files, code, JSON and YAML (`DB_PASS=`, `PGPASSWORD=`,
   `"client_secret": …`; a value without quotes runs to the end of the line when the key
   starts the line or names a password, so a passphrase goes whole), Chinese phrases (`密码是 …`,
   `数据库密码：…`), URLs with credentials (`redis://:pw@host`, a password holding `@`),
   command-line flags (`mysql -pX`, `curl -u user:pw`, `--password X`), `Authorization`
   headers, private key blocks, and token formats the library lacks (`github_pat_`, `hf_`,
   `whsec_`, `sk-ant-`, `glpat-`, Slack webhooks, …). Token prefixes are not anchored at a
   word boundary: `\\nghp_…` written as an escape and `%3Dghp_…` in an encoded URL are found.
2. detect-secrets' plugins, line by line: its regex detectors (AWS, GitHub, GitLab, Slack,
   Stripe, Twilio, JWT, …: whatever the installed version ships), its keyword detector
   (quoted values of secret-sounding names) and its Base64 entropy check of quoted strings,
   and of runs without quotes that mix capitals, small letters and digits (`BARE_RUN`).
   A value found is replaced wherever it occurs in the line, through the end of its token
   (a detector matching a fixed length would stop short of a longer key).

Left alone, so that coding talk survives: words after a key name that read as prose
("secret: You can …"), references and placeholders (`$TOKEN`, `${X}`, `<key>`,
`get_token()`), booleans and small numbers ("max_token: 600"), hex strings (commit ids and
checksums: the library's hex entropy check is off, a hex secret is found by its key name),
public IP addresses, and quoted strings below the library's entropy limit.

Markers are never matched again, so redacting redacted text changes nothing: a payload
cleaned before it was spooled is stored under the same turn key as one that arrived live.

The JS plugins (OpenCode, dsh) do not redact by themselves: before they spool a payload they
hand it to `mnemoweave redact --json`. Every byte written under the data dir went through
this module, and there is one rule set to keep. The library loads on the first call (0.1 to
0.2 s; the daemon does it as it warms up), its plugins once per process.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MARK = "[REDACTED:"
MIN_FOUND = 3  # characters: a shorter value the library reports is not worth a marker
PASSES = 8  # looks at one line: the keyword detector reports one value per pattern a look


def marker(label: str) -> str:
    return f"{MARK}{label}]"


# --- our rules ---------------------------------------------------------------------------

# Values that say what a key is, not what it holds: booleans, nothing, type names.
_NOT_SECRETS = frozenset(
    {"true", "false", "yes", "no", "on", "off", "null", "none", "nil", "undefined", "empty"}
    | {"str", "string", "int", "integer", "float", "number", "bool", "boolean", "bytes"}
    | {"dict", "list", "any", "object", "optional"}
)
_WORD = re.compile(r"[A-Za-z][a-z]*")  # a plain word: after "name:" in a line, prose or code


def plausible(value: str) -> bool:
    """Whether what follows a key name can be a secret: not prose ("secret: You can"), a
    reference or placeholder ($TOKEN, ${X}, {{ x }}, <key>, get_token(), env["X"], ****),
    a boolean or null, or a small number ("max_token: 600")."""
    from mnemoweave.text import stopwords

    first = value.split(maxsplit=1)[0] if value.strip() else ""
    word = first.strip(".,;:!?\"'()[]{}").casefold()
    if not word or word in _NOT_SECRETS or word in stopwords():
        return False
    if first[0] in "$<{%*" or "(" in first or "[" in first:
        return False
    return not (word.isdigit() and len(word) < 6)


@dataclass(frozen=True)
class Rule:
    """A pattern whose matched `secret…` group is replaced by a marker; a `bare…` group (a
    value without quotes after a key name) is replaced when it is `plausible`, a `word…`
    group (the same after a colon inside a line: `token: str`, `if not token: return`) when
    it is also more than a plain word. The rest of the match (a key's name, a URL's host)
    stays."""

    label: str
    pattern: re.Pattern[str]

    def apply(self, text: str) -> str:
        return self.pattern.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        whole = match.group()
        name = next((k for k, v in match.groupdict().items() if v), None)
        if name is None:
            return whole
        value = match.group(name)
        if value.startswith(MARK):
            return whole
        if name.startswith(("bare", "word")) and not plausible(value):
            return whole
        if name.startswith("word") and _WORD.fullmatch(value):
            return whole
        start, end = match.start(name) - match.start(), match.end(name) - match.start()
        return whole[:start] + marker(self.label) + whole[end:]


def _rule(label: str, pattern: str) -> Rule:
    return Rule(label, re.compile(pattern))


# The end of a key name that holds a password (its value may have spaces: a passphrase) …
_PASSWORD_ENDS = (
    *("password", "passwd", "passphrase", "passcode", "pwd"),
    *(rf"{word}[_\-]?pass" for word in ("db", "database", "key")),
    r"_(?<=[A-Z0-9]_)(?-i:PASS|PASSWORD|PASSWD|PWD|PASSPHRASE)",
)
# … or another secret: secret, token, api_key, apiKey, client_secret, SecretAccessKey,
# x-api-key, _authToken … in any case, and any upper-case name ending in _KEY, _TOKEN ….
_KEY_ENDS = (
    *_PASSWORD_ENDS,
    *("secret", "token", "credentials?"),
    *(
        rf"{word}[_\-]?key"
        for word in (
            *("api", "access", "secret", "private", "account", "client", "auth", "master"),
            *("encryption", "signing", "service", "app", "consumer", "license", "session"),
            *("subscription", "storage", "db", "database"),
        )
    ),
    r"_(?<=[A-Z0-9]_)(?-i:KEY|SECRET|TOKEN|CREDENTIALS?)",
)


def _name(ends: tuple[str, ...]) -> str:
    """One of the name ends; a look at the first character spares the engine trying every
    end at every position."""
    return f"(?=[{''.join(sorted({end[0] for end in ends}))}])(?:{'|'.join(ends)})"


_NAME, _PASSWORD = _name(_KEY_ENDS), _name(_PASSWORD_ENDS)
_IS = r"[\"']?[ \t]*(?::=|=>|[:=])(?!=)[ \t]*"  # what joins a key name and its value


def _quoted(group: str) -> str:
    """A value in double or single quotes, held by the group `group` or `group`2."""
    return rf"\"(?P<{group}>(?:[^\"\\\n]|\\.)*)\"|'(?P<{group}2>[^'\n]*)'"


_ZH_IS = r"(?:(?:就是|是|为|為|设为|设置为|设置成|改为|改成)[ \t]*[：:]?|[：＝])"
_BARE = r"[^\s\"'`,;&<>]*[^\s\"'`,;&<>)\]}]"  # a value without quotes, up to a delimiter

# Token formats the library lacks or matches too narrowly; never anchored at a boundary.
_TOKENS = {
    "api-key": r"sk-ant-[a-z]{3,5}\d\d-[A-Za-z0-9_\-]{20,}|sk-(?:proj|svcacct|admin|live)-"
    r"[A-Za-z0-9_\-]{20,}|sk-[A-Za-z0-9]{20,}",
    "github-token": r"github_pat_[A-Za-z0-9_]{22,}|gh[pousr]_[A-Za-z0-9]{30,}",
    "gitlab-token": r"gl(?:pat|dt|ft|rt|soat|cbt|ptt)-[A-Za-z0-9_\-]{16,}",
    "slack-token": r"xox[a-z](?:[.\-][A-Za-z0-9]+){2,}|xapp-\d-[A-Za-z0-9\-]{20,}",
    "webhook": r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks"
    r"|open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook"
    r"|[a-z0-9\-]+\.webhook\.office\.com/webhookb2)/[A-Za-z0-9_/@\-]+",
    "stripe-key": r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[A-Za-z0-9+/=]{20,}",
    "google-key": r"AIza[0-9A-Za-z_\-]{35}|GOCSPX-[A-Za-z0-9_\-]{20,}|ya29\.[0-9A-Za-z_\-]{20,}",
    "huggingface-token": r"hf_[A-Za-z0-9]{30,}",
    "npm-token": r"npm_[A-Za-z0-9]{36}",
    "cloud-key": r"LTAI[A-Za-z0-9]{12,24}|AKID[A-Za-z0-9]{32}|do[opr]_v1_[a-f0-9]{64}",
    "vault-token": r"hv[sbr]\.[A-Za-z0-9_\-]{24,}",
    "age-key": r"AGE-SECRET-KEY-1[0-9A-Z]{58}",
    "team-token": r"mwt_[A-Za-z0-9_\-]{43}",
    "service-token": r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|dapi[a-f0-9]{32}|lin_api_[A-Za-z0-9]{40}"
    r"|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}|sbp_[a-f0-9]{40}"
    r"|NRAK-[A-Z0-9]{27}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
    r"|sk\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]{20,}",
}

RULES: tuple[Rule, ...] = (
    _rule(
        "private-key",
        r"(?s)(?P<secret>-{4,5} ?BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}.*?"
        r"(?:-{4,5} ?END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)? ?-{4,5}|\Z)"
        r"|PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*\S+|\Z))",
    ),
    *(_rule(label, f"(?P<secret>{pattern})") for label, pattern in _TOKENS.items()),
    # scheme://user:password@host: the user may be empty, the password may hold "@"
    _rule("password", r"(?<=[A-Za-z0-9+.\-])://[^\s:/@?#]*:(?P<secret>[^\s/?#]+)@"),
    _rule(
        "authorization",
        r"(?i)(?<![A-Za-z0-9])(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?:(?:basic|bearer|token|digest|negotiate|apikey|api-key|sso-key)[ \t]+)?"
        r"(?P<bare>[^\s\"',;]+)",
    ),
    _rule(
        "bearer",
        r"(?i)(?<![A-Za-z0-9])bearer[ \t]+"
        r"(?P<secret>(?=[A-Za-z0-9\-._~+/]*[0-9])[A-Za-z0-9\-._~+/]{8,}=*)",
    ),
    # a key that starts its line (.env, YAML, INI): a bare value runs to the end of the line
    _rule(
        "secret",
        r"(?im)^[ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?[\"']?[A-Za-z0-9_.\-]*?"
        rf"{_NAME}{_IS}(?P<bare>[^\s\"'][^\n]*?)[ \t]*$",
    ),
    # a password inside a line: a bare value runs to the end of the line or of the value
    _rule(
        "secret",
        rf"(?im){_PASSWORD}{_IS}(?P<bare>[^\s\"'`&;][^\n\"'`&;]*?)[ \t]*(?=$|[\"'`&;])",
    ),
    _rule(
        "secret",
        rf"(?i){_NAME}[\"']?[ \t]*(?:(?::=|=>|=)(?!=)[ \t]*"
        rf"(?:{_quoted('secret')}|(?P<bare2>{_BARE}))"
        rf"|:[ \t]*(?:{_quoted('secret_')}|(?P<word>{_BARE})))",
    ),
    _rule(
        "secret",
        r"(?i)[?&;](?:key|sig|signature|code|auth|x-amz-signature|x-amz-credential"
        r"|x-amz-security-token|x-goog-signature|x-goog-credential)=(?P<secret>[^&#\s\"'<>]+)",
    ),
    _rule(
        "secret",
        r"(?i)(?<![A-Za-z0-9\-])--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|token"
        r"|secret|api-?key|access-key|secret-key|private-key|client-secret)(?:=|[ \t]+)"
        rf"(?:{_quoted('secret')}|(?P<bare>[^\s\"'\-][^\s\"']*))",
    ),
    _rule(
        "password",
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b[^\n|;&]*?[ \t]-p"
        r"(?P<secret>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']\S*)",
    ),
    _rule(
        "password",
        r"(?:\bsshpass[ \t]+-p[ \t]*|\bdocker[ \t]+login\b[^\n|;&]*?[ \t]-p[ \t]+"
        r"|\bredis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+)(?P<secret>\S+)",
    ),
    _rule(
        "password",
        r"(?<!\S)(?:-u|--user|--proxy-user)(?:=|[ \t]+)[\"']?[^\s:\"'/]+:(?P<bare>[^\s\"']+)",
    ),
    _rule("password", r"\blogin[ \t]+\S+[ \t]+password[ \t]+(?P<secret>\S+)"),  # .netrc
    _rule(
        "password",
        r"(?i)\b(?:identified(?:[ \t]+with[ \t]+\S+)?[ \t]+by|password)[ \t]+"
        r"(?:'(?P<secret>[^'\n]*)'|\"(?P<secret2>[^\"\n]*)\")",
    ),
    _rule(
        "password",
        r"(?i)(?<![A-Za-z])(?:password|passphrase|passcode|pwd|secret|token|key)[ \t]+(?:is|was)"
        r"[ \t]*:?[ \t]+"
        r"(?P<bare>[^\s,;]*[0-9!@#$%^&*_+=~/\\|\-][^\s,;]*)",
    ),
    # Chinese: 密码是 …, 数据库密码：…, and English names with Chinese words (token 是 …)
    _rule(
        "secret",
        rf"(?:(?:密码|口令|密钥|秘钥|私钥|令牌|凭证|凭据|授权码|访问码)[ \t]*(?:{_ZH_IS}|[:=])"
        rf"|(?i:password|passwd|secret|token|key)[ \t]*{_ZH_IS})[ \t]*"
        r"(?P<bare>[!-~](?:[ !-~]*[!-~])?)",
    ),
)


# --- detect-secrets ----------------------------------------------------------------------

# Its detectors that are not for us: a public IP address is not a secret, and the private
# key detector finds only a key's first line (RULES take the whole block).
SKIPPED = ("IPPublicDetector", "PrivateKeyDetector")
_RUN = re.compile(r"[A-Za-z0-9+/=_\\\-]{10,}")  # key characters (the entropy check's set)
_KEYISH = re.compile(r"[0-9A-Z]")
# A run of key characters without quotes is a key (a base64 blob, a line of a key's body)
# when it is this long, mixes capitals, small letters and digits, and switches between them
# as often as random text does (about 2 characters in 3; names such as
# `HTTPServerRequest2ResponseAdapterV10` or `Mozilla5WindowsNT10Win64x64` switch at most
# 45 in 100), with an entropy of at least BARE_ENTROPY bits a character. Of random base64
# strings that catches 91% at 24 characters, 98% at 32 and all but 1 in 500 at 64.
# Ids with a type prefix (`ses_…`, `msg_…`, `toolu_…`, `call_…`) are random too, and hosts
# send them in every payload: such a run is left alone (token prefixes that are secrets,
# `ghp_`, `hf_`, `sk_live_`, …, have rules of their own above).
BARE_RUN = 24
_TYPED_ID = re.compile(r"[a-z]{2,8}_")
BARE_SWITCHES = 0.46
BARE_ENTROPY = 4.0
_CLASSES = (re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"[0-9]"))
EDGES = " \t\"'=:"
# Where a value the library found goes on: the rest of its token.
_TAIL = r"(?:[A-Za-z0-9_\-+/=]|\.(?=[A-Za-z0-9_\-]))*"


def _label(secret_type: str) -> str:
    """'AWS Access Key' -> 'aws-access-key'."""
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


class _Library:
    """detect-secrets' plugins, built once; `found` lists what they find in one line."""

    def __init__(self) -> None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
        from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
        from detect_secrets.plugins.keyword import DENYLIST, DENYLIST_REGEX, KeywordDetector

        classes: Iterable[type[BasePlugin]] = get_mapping_from_secret_type_to_class().values()
        self.detectors = [
            cls()
            for cls in classes
            if issubclass(cls, RegexBasedDetector) and cls.__name__ not in SKIPPED
        ]
        self.keyword = KeywordDetector()
        firsts = "".join(sorted({word[0] for word in DENYLIST}))  # (a quick look first)
        self.keyword_named = re.compile(f"(?=[{firsts}]){DENYLIST_REGEX}", re.IGNORECASE)
        self.entropy = Base64HighEntropyString()
        self.shortest = 2**self.entropy.entropy_limit  # a shorter string is below the limit
        self.heuristic = heuristic

    def found(self, line: str) -> Iterator[tuple[str, str]]:
        """(value, secret type) for each value a plugin reports in the line. A plugin looks
        only at lines where it can find something: every regex detector's value is a run of
        key characters with a digit or a capital letter, or is in a URL; the keyword detector
        needs one of its names; a string passes the entropy limit only when long enough."""
        runs = _RUN.findall(line)
        if "://" in line or any(_KEYISH.search(run) for run in runs):
            for detector in self.detectors:
                for value in detector.analyze_string(line):
                    yield value, detector.secret_type
        if self.keyword_named.search(line):
            for value in self.keyword.analyze_string(line):
                if not self.heuristic.is_templated_secret(value):
                    yield value, self.keyword.secret_type
        if ('"' in line or "'" in line) and any(len(run) > self.shortest for run in runs):
            for value in self.entropy.analyze_string(line):
                if self._random(value, line):
                    yield value, self.entropy.secret_type
        for run in runs:
            if len(run) >= BARE_RUN and self._bare_key(run.strip("=_-")):
                yield run, self.entropy.secret_type

    def _bare_key(self, run: str) -> bool:
        """A run without quotes random enough to be a key (see BARE_RUN)."""
        if _TYPED_ID.match(run) or not all(kind.search(run) for kind in _CLASSES):
            return False
        classes = ["".join(k.pattern for k in _CLASSES if k.match(c)) for c in run]
        switched = sum(a != b for a, b in itertools.pairwise(classes))
        switches = switched / max(1, len(run) - 1)
        return (
            switches >= BARE_SWITCHES
            and self.entropy.calculate_shannon_entropy(run) >= BARE_ENTROPY
            and not self.heuristic.is_sequential_string(run)
        )

    def _random(self, value: str, line: str) -> bool:
        """A quoted string random enough to be a key (and not a sequence, a UUID or an id)."""
        check = self.heuristic
        return (
            self.entropy.calculate_shannon_entropy(value) > self.entropy.entropy_limit
            and not check.is_sequential_string(value)
            and not check.is_potential_uuid(value)
            and not check.is_likely_id_string(value, line)
        )

    def redact_line(self, line: str) -> str:
        """The line with what the plugins find replaced; found again until nothing is."""
        for _ in range(PASSES):
            labels = {}
            for value, kind in self.found(line):
                value = value.strip(EDGES)  # the blanks, quotes, = or : some detectors match
                if len(value) >= MIN_FOUND and MARK not in value:
                    labels[value] = _label(kind)
            before = line
            for value in sorted(labels, key=len, reverse=True):
                line = re.sub(re.escape(value) + _TAIL, marker(labels[value]), line)
            if line == before:
                return line
        return line


@functools.cache
def _plugins() -> _Library:
    """The plugins, built on the first call (detect-secrets loads then)."""
    return _Library()


@functools.lru_cache(maxsize=1024)  # a session's, a host's and a project's ids recur
def holds_secret(value: str) -> bool:
    """Whether `redact` would change the value: ids are refused, never redacted into one
    another (see model.check_identifier)."""
    return redact(value) != value


def redact(text: str) -> str:
    """The text with every secret replaced by a `[REDACTED:<kind>]` marker."""
    for rule in RULES:
        text = rule.apply(text)
    library = _plugins()
    return "\n".join(library.redact_line(line) for line in text.split("\n"))
