"""Secrets as people paste them into coding chats, in English and Chinese: the formats
detect-secrets' plugins look for, and real-world ones it lacks (key names in .env files,
JSON and YAML, URLs with credentials, command-line flags, Chinese phrases, newer token
prefixes). Every value is fake, drawn from a seeded generator with the format's alphabet
and length, so no file holds a whole token.

`CORPUS` lists `Secret(name, text, needles)`: what is said, and the parts of it that must
never be written anywhere (the secret, and for a passphrase or a key block its pieces).
`ORDINARY` lists texts that hold no secret and must come back unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Any

_pick = random.Random(20261201)
ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"


def rand(n: int, chars: str = ALNUM) -> str:
    return "".join(_pick.choice(chars) for _ in range(n))


def words(n: int) -> str:
    """A passphrase of made-up words (none of them a word any text here uses)."""
    return " ".join(rand(_pick.randint(5, 8), string.ascii_lowercase) for _ in range(n))


@dataclass(frozen=True)
class Secret:
    name: str
    text: str
    needles: tuple[str, ...]


def said(name: str, template: str, secret: str, *pieces: str) -> Secret:
    """`template` with `§` standing for the secret; the secret and `pieces` are needles."""
    return Secret(name, template.replace("§", secret), (secret, *pieces))


def key_block(kind: str) -> tuple[str, str]:
    """A PEM private key block and a line of its body."""
    body = [rand(64, B64) for _ in range(5)]
    block = f"-----BEGIN {kind}-----\n" + "\n".join(body) + f"\n-----END {kind}-----"
    return block, body[2]


def jwt() -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"sub": rand(10, string.digits), "name": rand(8, string.ascii_letters), "iat": 1}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{rand(43, URLSAFE)}"


def uuid() -> str:
    return f"{rand(8, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(4, HEX)}-{rand(12, HEX)}"


def _corpus() -> list[Secret]:
    rsa, rsa_line = key_block("RSA PRIVATE KEY")
    ssh, ssh_line = key_block("OPENSSH PRIVATE KEY")
    ec, ec_line = key_block("EC PRIVATE KEY")
    pgp, pgp_line = key_block("PGP PRIVATE KEY BLOCK")
    pkcs8, pkcs8_line = key_block("PRIVATE KEY")
    putty_line = rand(64, B64)
    putty = (
        "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n"
        f"{rand(64, B64)}\nPrivate-Lines: 2\n{putty_line}\n{rand(40, B64)}\n"
        f"Private-MAC: {rand(40, HEX)}"
    )
    phrase, env_phrase, zh_phrase, yaml_phrase = words(4), words(4), words(4), words(3)
    return [
        # --- the formats detect-secrets' plugins look for -----------------------------
        said("aws key id", "AWS key id § is in the CI vars", "AKIA" + rand(16, UPPER)),
        said("aws session key id", "temporary creds: § for an hour", "ASIA" + rand(16, UPPER)),
        said(
            "aws secret, quoted",
            's3 = boto3.client("s3", aws_secret_access_key="§")',
            rand(40, ALNUM + "/+"),
        ),
        said("artifactory token", "artifactory token § for the mirror", "AKCp" + rand(69)),
        said(
            "azure storage key",
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=§;EndpointSuffix=x",
            rand(86, B64) + "==",
        ),
        said("basic auth url", "deploy to https://deploy:§@ci.example.com/hook", rand(14)),
        said(
            "cloudant url",
            "couch at https://acme-bluemix:§@acme-bluemix.cloudant.com/db",
            rand(64, HEX),
        ),
        said(
            "discord bot token",
            "the discord bot logs in with §",
            "M" + rand(23, URLSAFE) + "." + rand(6, URLSAFE) + "." + rand(27, URLSAFE),
        ),
        said("github classic token", "push with § please", "ghp_" + rand(36)),
        said("github oauth token", "oauth gave us §", "gho_" + rand(36)),
        said("github app token", "installation token §", "ghs_" + rand(36)),
        said("github fine-grained token", "GH_TOKEN: §", "github_pat_" + rand(82, ALNUM + "_")),
        said("gitlab token", "clone with § as the password", "glpat-" + rand(20, URLSAFE)),
        said("gitlab token, short", "the runner registers with §", "glpat-" + rand(19, URLSAFE)),
        said("bare base64 blob", "the signing key: § (keep it safe)", rand(43, B64) + "="),
        said("a key's body line alone", "this line of the key fails to parse: §", rand(64, B64)),
        said("gitlab runner token", "register the runner with §", "glrt-" + rand(20, URLSAFE)),
        said("gitlab runner registration", "old runner token §", "GR1348941" + rand(20, URLSAFE)),
        said("ibm cloud iam key", 'ibm_cloud_iam_key = "§"', rand(44, URLSAFE)),
        said("ibm cos hmac secret", "cos_hmac_secret_access_key = §", rand(48, HEX)),
        said("json web token", "the session cookie was §", jwt()),
        said("mailchimp key", "mailchimp api §", rand(32, HEX) + "-us14"),
        said("npm token in .npmrc", "//registry.npmjs.org/:_authToken=§", "npm_" + rand(36)),
        said("openai classic key", "old key §", "sk-" + rand(20) + "T3BlbkFJ" + rand(20)),
        said(
            "pypi token", "twine upload -u __token__ §", "pypi-AgEIcHlwaS5vcmc" + rand(80, URLSAFE)
        ),
        said("sendgrid key", "mail through §", "SG." + rand(22, URLSAFE) + "." + rand(43, URLSAFE)),
        said(
            "slack bot token",
            "the slack bot token is §",
            f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24, LOWER)}",
        ),
        said(
            "slack user token",
            "xoxp for the export: §",
            f"xoxp-{rand(12, string.digits)}-{rand(12, string.digits)}-{rand(32, LOWER)}",
        ),
        said(
            "slack webhook",
            "alerts go to §",
            f"https://hooks.slack.com/services/T{rand(10, UPPER)}/B{rand(10, UPPER)}/{rand(24)}",
        ),
        said("softlayer key", "softlayer_api_key: §", rand(64, LOWER)),
        said("square oauth secret", "square app secret §", "sq0csp-" + rand(43, URLSAFE)),
        said("stripe live key", "stripe § for the shop", "sk_live_" + rand(99)),
        said("stripe restricted key", "reporting uses §", "rk_live_" + rand(24)),
        said(
            "telegram bot token",
            "the bot speaks through §",
            rand(10, string.digits) + ":AA" + rand(33, URLSAFE),
        ),
        said("twilio api key", "twilio key §", "SK" + rand(32, HEX)),
        said("rsa private key", "the deploy key:\n§\nkeep it safe", rsa, rsa_line),
        said("openssh private key", "id_ed25519 reads\n§", ssh, ssh_line),
        said("ec private key", "signing key §", ec, ec_line),
        said("pgp private key", "release signing:\n§", pgp, pgp_line),
        said("pkcs8 private key", '{"private_key": "§"}', pkcs8.replace("\n", "\\n"), pkcs8_line),
        said("putty key", "the .ppk file:\n§", putty, putty_line),
        said(
            "quoted random string",
            'settings["signing"] = "§"',
            rand(40, ALNUM + "+/"),
        ),
        # --- real-world formats the library lacks -----------------------------------
        said(".env DB_PASS", "in .env:\nDB_PASS=§\nDB_HOST=db", rand(16)),
        said(".env ENCRYPTION_KEY", "ENCRYPTION_KEY=§", rand(32, B64)),
        said("PGPASSWORD", "run it as PGPASSWORD=§ psql -h db app", rand(12)),
        said("MYSQL_PWD", "export MYSQL_PWD=§", rand(12)),
        said("anthropic key", "the Anthropic key is §", "sk-ant-api03-" + rand(93, URLSAFE)),
        said("openai project key", "OPENAI_API_KEY=§", "sk-proj-" + rand(120, URLSAFE)),
        said("deepseek key", "deepseek: §", "sk-" + rand(32, HEX)),
        said("huggingface token", "huggingface-cli login --token §", "hf_" + rand(34)),
        said("stripe webhook secret", "verify with §", "whsec_" + rand(32)),
        said("stripe test key", "tests use §", "sk_test_" + rand(24)),
        said("google api key", "maps key §", "AIza" + rand(35, URLSAFE)),
        said("google oauth secret", "client secret §", "GOCSPX-" + rand(28, URLSAFE)),
        said("npm token", "publish with §", "npm_" + rand(36)),
        said("digitalocean token", "doctl auth init -t §", "dop_v1_" + rand(64, HEX)),
        said("vault token", "VAULT said §", "hvs." + rand(90, URLSAFE)),
        said("age key", "age identity §", "AGE-SECRET-KEY-1" + rand(58, UPPER)),
        said("mnemoweave team token", "team_token = §", "mwt_" + rand(43, URLSAFE)),
        said("shopify token", "shopify admin §", "shpat_" + rand(32, HEX)),
        said("databricks token", "databricks §", "dapi" + rand(32, HEX)),
        said("linear key", "linear §", "lin_api_" + rand(40)),
        said("postman key", "postman §", "PMAK-" + rand(24, HEX) + "-" + rand(34, HEX)),
        said("doppler token", "doppler §", "dp.st." + rand(40)),
        said("supabase token", "supabase §", "sbp_" + rand(40, HEX)),
        said("new relic key", "newrelic §", "NRAK-" + rand(27, UPPER)),
        said("grafana token", "grafana §", "glsa_" + rand(32) + "_" + rand(8, HEX)),
        said("mapbox secret token", "mapbox §", "sk.eyJ1Ijoi" + rand(40) + "." + rand(22, URLSAFE)),
        said(
            "discord webhook",
            "post to §",
            f"https://discord.com/api/webhooks/{rand(18, string.digits)}/{rand(68, URLSAFE)}",
        ),
        said("redis url, empty user", "cache at redis://:§@cache:6379/0", rand(16)),
        said(
            "url password with @", "mongodb+srv://admin:§@cluster0.example.net/db", "p@" + rand(12)
        ),
        said("postgres url", "connect to postgres://admin:§@db.internal:5432/app", rand(14)),
        said("basic authorization header", "curl -H 'Authorization: Basic §' api", rand(24, B64)),
        said("bearer authorization header", "Authorization: Bearer §", rand(40, URLSAFE)),
        said("x-api-key header", "X-API-Key: §", rand(32)),
        said("gitlab private-token header", 'curl -H "PRIVATE-TOKEN: §" gitlab', rand(20, URLSAFE)),
        said("json password", '{"user": "app", "password": "§"}', rand(14)),
        said("json SecretAccessKey", '{"AccessKeyId": "x", "SecretAccessKey": "§"}', rand(40, B64)),
        said("json apiKey", '{"apiKey":"§","region":"eu"}', rand(30)),
        said("json client_secret", '{"client_id": "a", "client_secret": "§"}', rand(34)),
        said("yaml password", "db:\n  user: app\n  password: §\n  port: 5432", rand(16)),
        said("kubernetes secret", "data:\n  password: §", rand(24, B64) + "=="),
        said("properties password", "spring.datasource.password=§", rand(16)),
        said("connection string", "Server=db;Database=app;User Id=sa;Password=§;", rand(16)),
        said("python keyword argument", 'Client(api_key="§", timeout=5)', rand(40)),
        said("terraform secret", 'client_secret = "§"', rand(34)),
        said("docker env", "docker run -e POSTGRES_PASSWORD=§ postgres", rand(16)),
        said("heroku key", "HEROKU_API_KEY=§", uuid()),
        said("quoted passphrase", 'passphrase = "§"', phrase, phrase.split()[-1]),
        said("env passphrase", "PASSPHRASE=§", env_phrase, env_phrase.split()[-1]),
        said(
            "yaml passphrase", "backup:\n  passphrase: §\n  keep: 7", yaml_phrase, yaml_phrase[-5:]
        ),
        said("mysql -p", "mysql -u root -p§ shop", rand(14)),
        said("curl -u", "curl -u alice:§ https://api.example.com", rand(14)),
        said("--password", "app migrate --password § --verbose", rand(14)),
        said("--token", "cli login --token=§", rand(30)),
        said("sshpass", "sshpass -p § ssh deploy@web1", rand(14)),
        said("redis-cli -a", "redis-cli -h cache -a § ping", rand(14)),
        said("docker login -p", "docker login -u bot -p § registry.example.com", rand(20)),
        said("netrc", "machine api.example.com login bot password §", rand(20)),
        said("sql identified by", "CREATE USER app IDENTIFIED BY '§';", rand(14)),
        said("password is", "my password is § for now", rand(10) + "!9"),
        said("literal escape before a token", 'printf "a\\n§"', "ghp_" + rand(36)),
        said("url-encoded token", "https://x.example/cb?next=%3D§", "ghp_" + rand(36)),
        said(
            "access_token in a url", "GET https://api.example.com/v1?access_token=§&x=1", rand(40)
        ),
        said("aws presigned url", "https://b.s3.amazonaws.com/f?X-Amz-Signature=§", rand(64, HEX)),
        said("azure sas", "https://a.blob.core.windows.net/c?sv=2022&sig=§", rand(43, B64) + "%3D"),
        said(
            "skill source with password",
            "see https://wiki:§@wiki.example.com/page",
            rand(12),
        ),
        # --- Chinese --------------------------------------------------------------------
        said("zh 密码是", "服务器的 root 密码是 §，别外传", rand(12)),
        said("zh 数据库密码", "数据库密码：§", rand(10) + "@2024"),
        said("zh 口令为", "管理后台口令为 §", rand(12)),
        said("zh 密钥", "API 密钥：§", rand(32)),
        said("zh 私钥密码", "私钥密码是 §。", rand(12)),
        said("zh 令牌", "访问令牌：§", rand(40)),
        said("zh passphrase", "备份的密码是 §", zh_phrase, zh_phrase.split()[-1]),
        said("zh aliyun secret", "阿里云 AccessKey ID 是 LTAI5t，AccessKey Secret 是 §", rand(30)),
        said("zh aliyun key id", "阿里云 AccessKey ID：§", "LTAI" + rand(20)),
        said("zh tencent secret id", "腾讯云 SecretId 是 §", "AKID" + rand(32)),
        said("zh wechat appsecret", "小程序 appsecret：§", rand(32, HEX)),
        said(
            "zh dingtalk robot",
            "钉钉机器人：https://oapi.dingtalk.com/robot/send?access_token=§",
            rand(64, HEX),
        ),
        said(
            "zh wecom robot",
            "企业微信机器人 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=§ 已配好",
            uuid(),
        ),
        said(
            "zh feishu robot",
            "飞书机器人地址 §",
            f"https://open.feishu.cn/open-apis/bot/v2/hook/{uuid()}",
        ),
        said("zh aws key", "这是我的 AWS 访问密钥 §，请帮我配置", "AKIA" + rand(16, UPPER)),
        said("zh github token", "GitHub token 是 §", "ghp_" + rand(36)),
        said("zh openai key", "把 OPENAI_API_KEY 设置成 §", "sk-proj-" + rand(64, URLSAFE)),
        said("zh stripe", "Stripe 的密钥是 §", "sk_live_" + rand(30)),
        said(
            "zh slack", "Slack 机器人令牌：§", f"xoxb-{rand(12, string.digits)}-{rand(24, LOWER)}"
        ),
        said("zh url password", "连接串是 mysql://root:§@10.0.0.5:3306/shop", rand(12)),
        said("zh mysql -p", "登录：mysql -uroot -p§ -h 10.0.0.5", rand(12)),
        said("zh curl -u", "用 curl -u admin:§ 调接口", rand(12)),
        said("zh jwt", "登录接口返回的 JWT 是 §", jwt()),
        said("zh private key", "私钥如下：\n§", *key_block("RSA PRIVATE KEY")),
        said("zh env", "在 .env 里加上 REDIS_PASSWORD=§ 就行", rand(16)),
        said("zh json", '配置文件：{"password": "§"}', rand(14)),
    ]


CORPUS: list[Secret] = _corpus()

ORDINARY = [
    "secret: You can keep the cache warm by calling warm() at start.",
    "Keep the token budget of 600 for the weave.",
    "max_token: 600",
    "commit 3ef0ff8a1b2c3d4e5f60718293a4b5c6d7e8f901 fixed the flaky upload test",
    'git show "3ef0ff8a1b2c3d4e5f60718293a4b5c6d7e8f901" --stat',
    "The password is required on first login; the token expires after an hour.",
    "password: ${DB_PASSWORD}",
    "token = get_token()",
    'api_key = os.environ["API_KEY"]',
    "Use the token bucket algorithm; the password prompt appears on login.",
    "git push -u origin main && docker run -u 1000:1000 app",
    "mkdir -p build && cp -pr src dst",
    "ssh -p 2222 deploy@web1",
    "curl https://api.example.com:8443/v1/items?page=2",
    "See https://github.com/org/repo/blob/main/README.md#install",
    "UUID 123e4567-e89b-12d3-a456-426614174000 names the row",
    'the "id": "550e8400-e29b-41d4-a716-446655440000" field',
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "以后代码注释都用英文，提交信息也用英文。",
    "密码是什么？忘记密码要走重置流程。",
    "密码是 8 位以上，口令为空时拒绝登录。",
    "The secret to fast tests is fixtures.",
    "Bearer authentication is described in RFC 6750.",
    "Authorization: the caller must be an admin.",
    "HighEntropyStringsPlugin and KeywordDetector live in detect_secrets.plugins",
    "from mnemoweave.secrets import redact",
    "export PATH=$HOME/.local/bin:$PATH",
    "password = None",
    "if not token: return",
    "session_token_ttl = 3600",
    "HTTPServerRequest2ResponseAdapterV10 wraps the Mozilla5WindowsNT10Win64x64 agent",
    "build for x86_64-unknown-linux-gnu2024Q3Build and iPhone15ProMaxBatteryCapacity4422mAh",
    "session ses_5b1a0c36affeK1nQ0d9zWm3Xy7, message msg_a4F9qL2xZ8mN3pR7tV1wK6yB",
    "the tool call toolu_01XyZ9aB3cD5eF7gH9iJ1kL3 failed",
]
