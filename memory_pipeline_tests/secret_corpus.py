"""A corpus of fake credentials in realistic shapes, for the scrubbing tests.

Every value is generated from a seeded random source when the tests run, in the shape its
provider uses (prefix, alphabet, length), inside a sentence or a config line the way people paste
them: environment files, YAML, JSON, shell commands, URLs, HTTP headers, XML and plain prose. The
repository therefore holds no string that a credential scanner would flag.

``corpus()`` returns ``Planted`` entries: a name, the secret strings that must never be stored
(some formats carry two, such as an AWS key id and its secret), and the line that carries them.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

from mnemonic import Mnemonic

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


# Formats that only their label or context makes a secret (a password, a hex API key, a URL's
# password): alone, in a field such as a turn id, they are indistinguishable from other text.
NEEDS_LABEL = frozenset({
    "amqp", "azure_sas", "basic_auth", "bearer_opaque", "cli_flag", "dotnet_connection", "env_key",
    "json_secret", "mongodb_srv", "mysql_pwd", "pgpassword_export", "postgres_url", "prose_french",
    "prose_german", "prose_password", "prose_password_for", "redis_empty_user", "toml_token",
    "wifi_password", "x_api_key_header", "xml_element", "yaml_password", "pem_escaped_json",
    "curl_user", "mysql_glued", "sshpass", "netrc",
    # passwords in prose in other languages and scripts, connection files and configuration formats
    "prose_german_compound", "prose_chinese", "prose_japanese", "prose_korean", "prose_spanish",
    "prose_italian", "prose_portuguese", "prose_dutch", "prose_polish", "prose_russian", "prose_turkish",
    "prose_arabic", "prose_hindi", "prose_no_verb", "pgpass", "terraform_variable", "k8s_env_list",
    "ecs_name_value", "postman_key_value", "properties_password", "ini_password", "docker_config_auth",
    "jdbc_url", "otpauth_secret", "docker_login_flag", "keytool_storepass", "redis_requirepass",
    "powershell_plaintext", "wpa_psk", "bank_pin", "netrc_multiline", "markdown_table",
    "wallet_private_key_hex", "signing_secret_hex",
    # numbers and codes named for what they open
    "pin_for_what", "door_code_for_what", "safe_combination", "recovery_codes", "one_time_code", "bank_account_number",
    # passwords given in other ways: with their user, before the credential word, as a change
    "creds_user_password", "email_password_pair", "password_named_after", "password_changed_from",
    "password_contraction", "app_password",
    # a plain word as a password, digits as a passcode, a door's code abroad, a security answer
    "plain_word_password", "passcode_digits", "door_code_french", "security_answer", "nhs_number",
    # a made-up word as a password, a wireless network's key, a mother's maiden name
    "made_up_password", "wifi_key_plain_word", "maiden_name",
    # a passcode named with no verb, an app password in dashed groups
    "meeting_passcode", "app_password_dashed",
    # a password given to a command: htpasswd, Windows' net user, sudo reading it from echo
    "htpasswd_batch", "net_user_password", "sudo_stdin", "password_changed_to_pronoun", "session_cookie",
    # a password given to log in with and no credential word, a code named with words between
    "login_no_credential_word", "alarm_code_words_between",
    # a locker's code, a door code in dashed digits handed over as a change
    "locker_code", "door_code_changed_dashed",
    # "pass" set to a password; "it's" after a comma or the question; a colon later; a titled answer
    "pass_set_to", "pin_asked_then_given", "combination_its", "password_after_colon", "password_short_question",
    "security_answer_titled", "password_quoted_words", "pin_colon_later", "password_new_one", "bank_account_is",
    "ssn_later",
    # a note's list of accounts and codes, each after its label
    "list_login", "list_door_code", "list_safe_combination", "pin_dash",
    # a password corrected, a code changed later in its sentence, a bank's memorable word, "pin's"
    "password_not_that", "code_changed_later", "memorable_word", "pin_contraction", "login_user_and_password",
    # a password after an aside between commas, a dial's numbers after "combination", wifi "use" a login
    "password_after_aside", "combination_bare", "wifi_use_login", "pin_in_brackets", "code_at_what", "email_dash_password",
    # an adverb before the value, two nouns run together, a PIN in lower case after whose it is, a code in brackets
    "pin_adverb", "password_adverb", "password_two_nouns", "owned_pin_lower_case", "access_code_in_brackets",
    # nine digits after "social", words before a one-time code's verb, the question then the PIN, a code
    # changed again, one number of a named lock, what a lock opens with, an account after its routing number
    "ssn_social_undashed", "one_time_code_words_between", "pin_question_then_value", "door_code_changed_again",
    "combination_one_number", "safe_opens_with", "account_after_routing",
    # a locker code in a dial's numbers, the lockbox itself handed its code, a PIN said then given after a comma
    "locker_code_dial", "lockbox_is", "pin_said_then_given",
    # a password's name asked as a question of oneself, then a plain word; a wifi code of digits
    "password_own_question", "wifi_code_digits",
    # a card named before a number that fails its check digit, a security code after the expiry, the CVV
    # "on the back", an account after a sort code, an Australian tax file number, a health card's number
    "card_named_not_luhn", "card_code_after_expiry", "cvv_on_the_back", "account_after_sort_code", "tax_file_number",
    "health_card_number",
    # a PIN in commas, a code a few words before "was", a plain word as a password in apposition
    "pin_in_commas", "gate_code_words_then_was", "password_in_apposition",
    # a door code handed over by "c'est", an alarm's code named "clave"
    "door_code_french_cest", "alarm_code_spanish_clave",
    # a code after a comma and its lock's name, "pass" and a few words before a colon
    "lockbox_comma_code", "pass_words_then_colon",
})
# Things' names people choose as passwords (the scrubber knows them only from its word index).
PLAIN_WORDS = ("sunshine", "dragon", "popcorn", "bluebird", "pudding", "football", "princess", "lighthouse")
# ... and words no dictionary holds (the scrubber knows them by their absence from its index).
MADE_UP_WORDS = ("qwerty", "letmein", "changeme", "iloveyou", "asdfgh", "zxcvbnm", "qazwsx", "trustno")
# ... and things' names run together, as a weak password often is ("bananabread").
RUN_TOGETHER_NOUNS = ("banana", "pancake", "dragon", "rooster", "pumpkin", "walrus")


# Passwords said in a sentence, in other languages and scripts: the format's name, then the
# sentence with {} where the password goes.
PROSE_PASSWORDS = {
    "prose_german_compound": "mein Passwort für den Staging-Server lautet {}",
    "prose_chinese": "我的数据库密码是{}",
    "prose_japanese": "サーバーのパスワードは{}です",
    "prose_korean": "와이파이 비밀번호는 {} 입니다",
    "prose_spanish": "la contraseña del servidor de correo es {}",
    "prose_italian": "la password del router è {}",
    "prose_portuguese": "a senha do banco é {}",
    "prose_dutch": "het wachtwoord van de NAS is {}",
    "prose_polish": "hasło do serwera to {}",
    "prose_russian": "пароль от почты: {}",
    "prose_turkish": "sunucu şifresi {} olarak değişti",
    "prose_arabic": "كلمة المرور هي {}",
    "prose_hindi": "मेरा पासवर्ड {} है",
}


@dataclass(frozen=True)
class Planted:
    name: str
    secrets: tuple[str, ...]  # what must never be stored
    line: str  # how it is written

    @property
    def alone(self) -> bool:
        """Recognisable without its label (a vendor prefix, a key id, a JWT, a random token)."""
        return self.name not in NEEDS_LABEL and "\n" not in self.secrets[0]


class _Gen:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def __call__(self, n: int, alphabet: str = ALNUM) -> str:
        # Generated tokens mix digits and letters, as real ones do (a 40-character run of only
        # letters would be a different thing).
        body = [self.rng.choice(alphabet) for _ in range(n)]
        letters = [c for c in alphabet if c.isalpha()]
        digits = [c for c in alphabet if c.isdigit()]
        if digits and letters and n >= 4:
            body[self.rng.randrange(n)] = self.rng.choice(digits)
            body[self.rng.randrange(n)] = self.rng.choice(letters)
            if any(c.isupper() for c in letters) and any(c.islower() for c in letters):
                body[0] = self.rng.choice([c for c in letters if c.isupper()])
                body[-1] = self.rng.choice([c for c in letters if c.islower()])
        return "".join(body)

    def words(self, n: int, language: str = "english") -> list[str]:
        """``n`` words of a wallet recovery phrase's word list."""
        return [self.rng.choice(Mnemonic(language).wordlist) for _ in range(n)]

    def password(self) -> str:
        word = self.rng.choice(["Summer", "Falcon", "Orchid", "Granite", "Velvet", "Harbor"])
        return f"{word}{self.rng.randint(10, 99)}{self.rng.choice('!#%&*')}{self(5)}"


def _b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


def corpus(seed: int = 20261122) -> list[Planted]:
    """At least 100 credential formats, each in one realistic line (a few lines for a block)."""
    g = _Gen(seed)
    pw = g.password
    jwt = f"{_b64url({'alg': 'RS256', 'typ': 'JWT'})}.{_b64url({'sub': 'u-' + g(6), 'exp': 1798000000})}.{g(86, URLSAFE)}"
    aws_id, aws_secret = "AKIA" + g(16, UPPER_DIGITS), g(40, B64)
    pem_body = "\n".join(g(64, B64) for _ in range(5))
    basic = base64.b64encode(f"deploy:{pw()}".encode()).decode()
    entries: list[tuple[str, tuple[str, ...] | str, str]] = [
        ("aws_key_id_and_secret_unlabelled", (aws_id, aws_secret), f"AWS creds for the backup job: {aws_id} {aws_secret}"),
        ("aws_env_pair", (s := g(40, B64),), f"export AWS_SECRET_ACCESS_KEY={s}"),
        ("aws_session_key_id", (s := "ASIA" + g(16, UPPER_DIGITS),), f"temporary key {s} expires at noon"),
        ("openai_project", (s := "sk-proj-" + g(100, URLSAFE),), f"OPENAI_API_KEY={s}"),
        ("openai_legacy", (s := "sk-" + g(48),), f"my old OpenAI key was {s}, rotate it"),
        ("anthropic", (s := "sk-ant-api03-" + g(93, URLSAFE) + "AA",), f"ANTHROPIC_API_KEY: {s}"),
        ("openrouter", (s := "sk-or-v1-" + g(64, LOWER_HEX),), f"openrouter key {s}"),
        ("huggingface", (s := "hf_" + g(34, string.ascii_letters),), f"HF_TOKEN={s}"),
        ("huggingface_prose", (s := "hf_" + g(34),), f"use my hugging face token {s} for the private model"),
        ("github_classic", (s := "ghp_" + g(36),), f"git remote set-url origin https://{s}@github.com/acme/app.git"),
        ("github_fine_grained", (s := "github_pat_" + g(22) + "_" + g(59),), f"GH token: {s}"),
        ("github_app", (s := "ghs_" + g(36),), f"the installation token {s} lasts an hour"),
        ("gitlab_pat", (s := "glpat-" + g(20, URLSAFE),), f"GITLAB_TOKEN={s}"),
        ("slack_bot", (s := f"xoxb-{g(12, string.digits)}-{g(13, string.digits)}-{g(24)}",), f"slack bot token {s}"),
        ("slack_app", (s := f"xapp-1-A0{g(9, UPPER_DIGITS)}-{g(13, string.digits)}-{g(64, LOWER_HEX)}",), f"SLACK_APP_TOKEN={s}"),
        ("slack_webhook", (s := f"https://hooks.slack.com/services/T0{g(8, UPPER_DIGITS)}/B0{g(8, UPPER_DIGITS)}/{g(24)}",), f"alerts post to {s}"),
        ("stripe_secret", (s := "sk_live_" + g(99),), f"stripe.api_key = '{s}'"),
        ("stripe_restricted", (s := "rk_live_" + g(24),), f"restricted key {s}"),
        ("stripe_webhook", (s := "whsec_" + g(32),), f"STRIPE_WEBHOOK_SECRET={s}"),
        ("google_api", (s := "AIza" + g(35, URLSAFE),), f"maps key {s}."),
        ("google_oauth_secret", (s := "GOCSPX-" + g(28, URLSAFE),), f'"client_secret": "{s}"'),
        ("google_access_token", (s := "ya29." + g(120, URLSAFE),), f"curl -H 'Authorization: Bearer {s}' https://www.googleapis.com"),
        ("sendgrid", (s := f"SG.{g(22, URLSAFE)}.{g(43, URLSAFE)}",), f"mail goes out with {s}"),
        ("twilio", (s := "SK" + g(32, LOWER_HEX),), f"twilio api key {s}"),
        ("mailgun", (s := "key-" + g(32, LOWER_HEX),), f"MAILGUN_API_KEY={s}"),
        ("mailchimp", (s := g(32, LOWER_HEX) + "-us14",), f"mailchimp key {s}"),
        ("npm", (s := "npm_" + g(36),), f"//registry.npmjs.org/:_authToken={s}"),
        ("pypi", (s := "pypi-AgEIcHlwaS5vcmc" + g(70, URLSAFE),), f"twine upload -u __token__ -p {s} dist/*"),
        ("digitalocean", (s := "dop_v1_" + g(64, LOWER_HEX),), f"DIGITALOCEAN_TOKEN={s}"),
        ("shopify", (s := "shpat_" + g(32, LOWER_HEX),), f"shopify admin token {s}"),
        ("atlassian", (s := "ATATT3xFfGF0" + g(180, URLSAFE),), f"jira api token {s}"),
        ("databricks", (s := "dapi" + g(32, LOWER_HEX),), f"DATABRICKS_TOKEN={s}"),
        ("linear", (s := "lin_api_" + g(40),), f"linear key {s}"),
        ("notion", (s := "ntn_" + g(46),), f"notion integration secret {s}"),
        ("groq", (s := "gsk_" + g(52),), f"GROQ_API_KEY={s}"),
        ("replicate", (s := "r8_" + g(37),), f"replicate token {s}"),
        ("vault", (s := "hvs." + g(90, URLSAFE),), f"VAULT_TOKEN={s}"),
        ("docker", (s := "dckr_pat_" + g(27, URLSAFE),), f"docker login -u ci --password {s}"),
        ("sentry", (s := "sntrys_" + g(120, B64),), f"SENTRY_AUTH_TOKEN={s}"),
        ("age", (s := "AGE-SECRET-KEY-1" + g(58, UPPER_DIGITS),), f"age identity {s}"),
        ("jwt", (jwt,), f"session cookie {jwt}"),
        ("bearer_opaque", (s := g(40, URLSAFE + "."),), f"Authorization: Bearer {s}"),
        ("basic_auth", (basic,), f"Authorization: Basic {basic}"),
        ("azure_storage", (s := g(86, B64) + "==",), f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net"),
        ("azure_sas", (s := g(43, B64).replace("+", "%2B").replace("/", "%2F") + "%3D",),
         f"https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&se=2026-12-01&sr=b&sp=r&sig={s}"),
        ("azure_ad_secret", (s := g(3) + "8Q~" + g(34, URLSAFE + "~."),), f"AZURE_CLIENT_SECRET={s}"),
        ("postgres_url", (s := pw(),), f"DATABASE_URL=postgres://app:{s}@db.internal:5432/app"),
        ("redis_empty_user", (s := pw(),), f"REDIS_URL=redis://:{s}@cache.internal:6379/0"),
        ("mongodb_srv", (s := g(20),), f"mongodb+srv://admin:{s}@cluster0.abcde.mongodb.net/prod"),
        ("amqp", (s := g(16),), f"- broker: amqp://guest:{s}@rabbit.local/"),
        ("pgpassword_export", (s := pw(),), f"export PGPASSWORD='{s}'"),
        ("mysql_pwd", (s := pw(),), f"MYSQL_PWD={s} mysql -u root"),
        ("yaml_password", (s := pw(),), f'  db_password: "{s}"'),
        ("json_secret", (s := g(30),), f'{{"client_secret": "{s}", "client_id": "web"}}'),
        ("toml_token", (s := g(40, LOWER_HEX),), f'api_token = "{s}"'),
        ("env_key", (s := g(32),), f"MAPBOX_KEY={s}"),
        ("dotnet_connection", (s := pw(),), f"Server=tcp:sql.acme.net;Database=crm;User Id=app;Password={s};"),
        ("cli_flag", (s := pw(),), f"mysql -h db -u root --password={s} crm"),
        ("xml_element", (s := g(24),), f"<apiKey>{s}</apiKey>"),
        ("prose_password", (s := pw(),), f"fyi my password is {s} until Friday"),
        ("prose_password_for", (s := "Tr0ub4dor&" + g(3),), f"The password for the staging box was changed to {s}."),
        ("prose_german", (s := pw(),), f"Mein Passwort ist {s}"),
        ("prose_french", (s := pw(),), f"mon mot de passe est {s}"),
        ("wifi_password", (s := pw(),), f"wifi password: {s}"),
        ("pem_rsa", (pem_body,), f"-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"),
        ("pem_openssh", (pem_body,), f"-----BEGIN OPENSSH PRIVATE KEY-----\n{pem_body}\n-----END OPENSSH PRIVATE KEY-----"),
        ("pem_escaped_json", (pem_body.split("\n")[0],), "{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n" + pem_body.replace("\n", "\\n") + "\\n-----END PRIVATE KEY-----\\n\"}"),
        ("discord_webhook", (s := f"https://discord.com/api/webhooks/{g(18, string.digits)}/{g(68, URLSAFE)}",), f"post to {s}"),
        ("telegram", (s := f"{g(10, string.digits)}:AA{g(33, URLSAFE)}",), f"TELEGRAM_BOT_TOKEN={s}"),
        ("square", (s := "sq0atp-" + g(22, URLSAFE),), f"square token {s}"),
        ("generic_random_token", (s := g(48),), f"the webhook signing token {s}"),
        ("x_api_key_header", (s := g(32, LOWER_HEX),), f"X-API-Key: {s}"),
        ("curl_user", (s := pw(),), f"curl -u admin:{s} https://api.acme.io/v1/export"),
        ("mysql_glued", (s := pw(),), f"mysqldump -h db.internal -u backup -p{s} crm > crm.sql"),
        ("sshpass", (s := pw(),), f"sshpass -p '{s}' ssh deploy@10.0.4.12"),
        ("netrc", (s := g(18),), f"machine api.acme.io login deploy password {s}"),
        ("firebase", (s := f"AAAA{g(7, URLSAFE)}:APA91b{g(134, URLSAFE)}",), f"FCM server key {s}"),
        # Kinds added with the multilingual and configuration-format families.
        *((name, (s := pw(),), sentence.format(s)) for name, sentence in PROSE_PASSWORDS.items()),
        ("prose_no_verb", (s := "hunter" + g(2, string.digits),), f"the loader password {s} works"),
        ("pgpass", (s := pw(),), f"db.internal:5432:app:app_user:{s}"),
        ("terraform_variable", (s := pw(),), f'variable "db_password" {{ default = "{s}" }}'),
        ("k8s_env_list", (s := pw(),), f'env:\n  - name: DB_PASSWORD\n    value: "{s}"'),
        ("ecs_name_value", (s := g(32),), f'{{"name": "API_TOKEN", "value": "{s}"}}'),
        ("postman_key_value", (s := g(24),), f'{{"key": "apiKey", "value": "{s}", "enabled": true}}'),
        ("properties_password", (s := pw(),), f"spring.datasource.password={s}"),
        ("ini_password", (s := pw(),), f"[client]\nuser = backup\npassword = {s}"),
        ("docker_config_auth", (s := base64.b64encode(f"ci:{pw()}".encode()).decode(),), f'{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}'),
        ("jdbc_url", (s := pw(),), f"jdbc:postgresql://db.internal:5432/app?user=app&password={s}"),
        ("otpauth_secret", (s := g(32, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),), f"otpauth://totp/Acme:alice?secret={s}&issuer=Acme"),
        ("aws_session_token", (s := "FwoGZXIvYXdzE" + g(300, B64),), f"aws_session_token = {s}"),
        ("long_bearer", (s := g(600, URLSAFE),), f"Authorization: Bearer {s}"),
        ("docker_login_flag", (s := pw(),), f"docker login -u ci -p {s} ghcr.io"),
        ("keytool_storepass", (s := pw(),), f"keytool -list -keystore app.jks -storepass {s}"),
        ("redis_requirepass", (s := pw(),), f"requirepass {s}"),
        ("powershell_plaintext", (s := pw(),), f'$secure = ConvertTo-SecureString "{s}" -AsPlainText -Force'),
        ("wpa_psk", (s := pw(),), f'network={{\n    ssid="office"\n    psk="{s}"\n}}'),
        ("bank_pin", (s := g(6, string.digits),), f"my bank card PIN is {s}"),
        ("netrc_multiline", (s := pw(),), f"machine api.acme.io\n  login deploy\n  password {s}"),
        ("markdown_table", (s := pw(),), f"| service | user | password |\n|---|---|---|\n| grafana | admin | {s} |"),
        ("wallet_private_key_hex", (s := "0x" + g(64, LOWER_HEX),), f"my wallet private key {s} stays offline"),
        ("signing_secret_hex", (s := g(32, LOWER_HEX),), f"the webhook signing secret {s} rotates monthly"),
        ("seed_phrase", (s := " ".join(g.words(12)),), f"my wallet recovery phrase is {s}, also on paper"),
        ("seed_phrase_numbered", (s := " ".join(f"{i}. {w}" for i, w in enumerate(g.words(24), 1)),), f"Seed words: {s}"),
        ("seed_phrase_spanish", (s := ", ".join(g.words(12, "spanish")),), f"frase de recuperación: {s}"),
        ("pin_for_what", (s := g(4, string.digits),), f"the PIN for the garage door is {s}"),
        ("door_code_for_what", (s := g(6, string.digits),), f"the code for the front door is {s}, see you"),
        ("safe_combination", (s := "-".join(g(2, string.digits) for _ in range(3)),), f"the combination to the office safe is {s}"),
        ("recovery_codes", (a := g(4, string.digits) + "-" + g(4, string.digits), b := g(8, LOWER_HEX)),
         f"my 2FA backup codes are {a}, {b}"),
        ("one_time_code", (s := g(6, string.digits),), f"the verification code is {s}"),
        ("bank_account_number", (s := g(12, string.digits),), f"my checking account number is {s}"),
        ("creds_user_password", (s := pw(),), f"creds are admin:{s} for the staging box"),
        ("email_password_pair", (s := pw(),), f"PayPal: jane.doe@example.com / {s}"),
        ("password_named_after", (s := pw(),), f"I use '{s}' as my password everywhere"),
        ("password_changed_from", (a := pw(), b := pw()), f"my bank password was changed from {a} to {b}"),
        ("password_contraction", (s := pw(),), f"My password's {s}, don't share it"),
        ("app_password", (s := " ".join(g(4, string.ascii_lowercase) for _ in range(4)),), f"the gmail app password is {s}"),
        ("plain_word_password", (s := g.rng.choice(PLAIN_WORDS),), f"ok so my netflix password is {s}, don't laugh"),
        ("passcode_digits", (s := g(6, string.digits),), f"My iPhone passcode is {s}."),
        ("door_code_french", (s := g(4, string.digits),), f"Le code de la porte est {s}, à ce soir"),
        ("security_answer", (s := g(8, string.ascii_lowercase).capitalize(),), f"the answer to my security question is {s}"),
        ("made_up_password", (s := g.rng.choice(MADE_UP_WORDS),), f"the router admin password is {s} and nobody changed it"),
        ("wifi_key_plain_word", (s := g.rng.choice(PLAIN_WORDS),), f"Our wifi key is {s}."),
        ("maiden_name", (s := g(7, string.ascii_lowercase).capitalize(),), f"my mother's maiden name is {s}, for the bank"),
        ("meeting_passcode", (s := g(6, string.digits),),
         f"Join: Meeting ID {g(3, string.digits)} {g(4, string.digits)} {g(4, string.digits)} Passcode {s}"),
        ("app_password_dashed", (s := "-".join(g(4, string.ascii_lowercase) for _ in range(4)),),
         f"set up Mail with the app-specific password {s} and it synced"),
        ("htpasswd_batch", (s := pw(),), f"htpasswd -bc /etc/nginx/.htpasswd ops {s}"),
        ("session_cookie", (s := g(32, LOWER_HEX),),
         f"curl -H 'Cookie: theme=dark; sessionid={s}' https://app.example.com/api/me"),
        ("password_changed_to_pronoun", (s := g.rng.choice(PLAIN_WORDS).capitalize() + g(2, string.digits),),
         f"my bank password expired last week so I changed it to {s}, same as the old one plus a number"),
        ("net_user_password", (s := pw(),), f"net user svc_backup {s} /add /domain"),
        ("login_no_credential_word", (s := pw(),), f"use {s} to log in to the router, the admin page is at 192.168.1.1"),
        ("alarm_code_words_between", (s := g(4, string.digits),), f"the alarm panel master code is {s}# if it beeps"),
        ("locker_code", (s := g(4, string.digits),), f"My gym locker code: {s}"),
        ("door_code_changed_dashed", (s := "-".join(g(4, string.digits)),), f"The door code changed, it's now {s}."),
        ("pass_set_to", (s := pw(),), f"I set the admin pass to {s} yesterday, tell the on-call."),
        ("pin_asked_then_given", (s := g(4, string.digits),), f"Can you help me remember my bank PIN? It's {s}."),
        ("combination_its", (s := "-".join(g(2, string.digits) for _ in range(3)),),
         f"I keep forgetting my gym locker combo, it's {s}."),
        ("password_after_colon", (s := g.rng.choice(PLAIN_WORDS).capitalize() + g(2, string.digits),),
         f"My Netflix password is the same as my email one: {s}"),
        ("password_short_question", (s := pw(),), f"my password for the router? {s}"),
        ("security_answer_titled", (s := g(7, string.ascii_lowercase).capitalize(),),
         f"security question answer: Mr. {s}"),  # the name after its title
        ("password_quoted_words", (s := " ".join(g.rng.sample(PLAIN_WORDS, 3)),),
         f'He said the master password is "{s}", written on the card.'),
        ("pin_colon_later", (s := g(4, string.digits),), f"I always forget my PIN so I'll write it here: {s}"),
        ("password_new_one", (s := "ilove" + g.rng.choice(PLAIN_WORDS) + g(1, string.digits),),
         f"I need help resetting my Instagram. The old password was expired and the new one is {s}"),
        ("bank_account_is", (s := g(9, string.digits),), f"my bank account is {s} at Chase, in case you need it"),
        ("ssn_later", (s := f"{g(3, string.digits)}-{g(2, string.digits)}-{g(4, string.digits)}",),
         f"my SSN, in case you need it for the form: {s}"),
        ("list_login", (s := pw(),), f"## Accounts\n- Router admin: admin / {s}\n- Printer: none"),
        ("list_door_code", (s := g(4, string.digits),), f"## House\n- Garage door: {s}\n- Bins go out on Tuesday"),
        ("list_safe_combination", (s := "-".join(g(2, string.digits) for _ in range(3)),), f"Codes:\n- Safe (office): {s}"),
        ("pin_dash", (s := g(4, string.digits),), f"- Bank PIN - {s}"),
        ("password_not_that", (s := pw(),), f"sorry typo, the password is Xq9#vL2m not {s}"),
        ("code_changed_later", (s := g(4, string.digits),), f"my old locker code was 1122 but they changed it to {s}"),
        ("memorable_word", (s := g.rng.choice(PLAIN_WORDS),), f'my bank\'s memorable word is "{s}"'),
        ("pin_contraction", (s := g(4, string.digits),), f"my voicemail pin's {s}"),
        ("login_user_and_password", (s := pw(),), f"the admin page is 192.168.0.1 and I log in with admin and {s}"),
        ("password_after_aside", (s := pw(),),
         f"the admin password, which I set up last year when we moved in, is {s}. Can you help?"),
        ("combination_bare", (s := f"{g(1, string.digits)}-{g(2, string.digits)}-{g(2, string.digits)}",),
         f"Remind me: locker 114, combination {s}."),
        ("wifi_use_login", (s := pw(),), f"For the conference wifi use guest / {s}"),
        ("pin_in_brackets", (s := g(4, string.digits),), f"I wrote my PIN ({s}) on the back of the card, I know."),
        ("code_at_what", (s := "-".join(g(4, string.digits)),), f"just so you know the safe code at the hotel room is {s}"),
        ("email_dash_password", (s := pw(),), f"Can you remember this for me: Hulu - mark@me.com - {s}"),
        ("pin_adverb", (s := g(4, string.digits),), f"my pin is still {s}, I never changed it"),
        ("password_adverb", (s := g.rng.choice(PLAIN_WORDS),), f"the wifi password is basically {s}, lol"),
        ("password_two_nouns", (s := g.rng.choice(RUN_TOGETHER_NOUNS) + g.rng.choice(("bread", "house", "fire", "garden")),),
         f"my password is now {s} because I kept forgetting the old one"),
        ("owned_pin_lower_case", (s := g(4, string.digits),), f"my atm pin {s}, don't tell anyone"),
        ("access_code_in_brackets", (s := g(4, string.digits),), f"the alarm code ({s}) is on the fridge door"),
        ("ssn_social_undashed", (s := g(9, string.digits),), f"My social is {s} if the form needs it"),
        ("one_time_code_words_between", (s := g(6, string.digits),), f"The login code they texted me is {s}"),
        ("pin_question_then_value", (s := g(4, string.digits),), f"My Venmo PIN? {s}."),
        ("door_code_changed_again", (s := g(4, string.digits),), f"our door code changed again, now it's {s}"),
        ("combination_one_number", (s := g(4, string.digits),), f"the combination on my bike lock is {s}"),
        ("safe_opens_with", (s := "-".join(g(2, string.digits) for _ in range(3)),), f"The safe in the closet opens with {s}."),
        ("account_after_routing", (s := g(12, string.digits),), f"My bank routing number is 021000021 and account {s}"),
        ("locker_code_dial", (s := "-".join(str(g.rng.randint(1, 39)) for _ in range(3)),), f"I'll remember that your locker code is {s}."),
        ("lockbox_is", (s := g(4, string.digits),), f"The Airbnb lockbox is {s}, check-in after 3"),
        ("pin_said_then_given", (s := g(4, string.digits),), f"Mom's bank PIN is her birthday, {s}"),
        ("password_own_question", (s := g.rng.choice(PLAIN_WORDS),), f"My password? It's {s}."),
        ("wifi_code_digits", (s := g(8, string.digits),), f"the wifi code is {s}, the network is the one with 5G"),
        ("card_named_not_luhn", (s := " ".join(["4" + g(3, string.digits)] + [g(4, string.digits) for _ in range(3)]),),
         f"my card is {s} exp 09/26 if you need it for the booking"),
        ("card_code_after_expiry", (s := g(3, string.digits),), f"visa ending 4242 exp 11/27 security code {s}"),
        ("cvv_on_the_back", (s := g(3, string.digits),), f"The CVV on the back is {s}"),
        ("account_after_sort_code", (s := g(8, string.digits),), f"my sort code is 20-45-67 and account {s}"),
        ("tax_file_number", (s := " ".join(g(3, string.digits) for _ in range(3)),), f"My tax file number is {s}"),
        ("health_card_number", (s := f"{g(4, string.digits)}-{g(3, string.digits)}-{g(3, string.digits)}-AB",),
         f"My health card number is {s}"),
        ("pin_in_commas", (s := g(4, string.digits),), f"Your new PIN, {s}, has been saved."),
        ("gate_code_words_then_was", (s := g(4, string.digits),), f"To confirm, the gate code you gave me was {s}."),
        ("password_in_apposition", (s := g.rng.choice(PLAIN_WORDS),), f"Noted: your Wi-Fi password, {s}, is saved."),
        ("door_code_french_cest", (s := g(4, string.digits),), f"le code de la porte c'est {s}"),
        ("alarm_code_spanish_clave", (s := g(4, string.digits),), f"la clave de la alarma es {s}"),
        ("lockbox_comma_code", (s := g(4, string.digits),), f"the spare house key is in the lockbox, code {s}"),
        ("pass_words_then_colon", (s := pw(),), f"can u remember my apple id pass for me: {s}"),
        ("sudo_stdin", (s := pw(),), f'echo "{s}" | sudo -S systemctl restart nginx'),
        ("onepassword_secret_key", (s := "A3-" + "-".join(g(n, UPPER_DIGITS) for n in (6, 6, 5, 5, 5, 5)),),
         f"my 1Password secret key is in the emergency kit: {s}"),
        ("bitlocker_recovery_key", (s := "-".join(g(6, string.digits) for _ in range(8)),),
         f"BitLocker recovery key for the laptop: {s}"),
        ("nhs_number", (s := " ".join((g(3, string.digits), g(3, string.digits), g(4, string.digits))),),
         f"my NHS number is {s}, the GP asked for it"),
        ("braintree", (s := f"access_token$production${g(16, string.ascii_lowercase + string.digits)}${g(32, LOWER_HEX)}",),
         f"BT_ACCESS_TOKEN={s}"),
        ("pgp_private_key", (pem_body,), f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{pem_body}\n-----END PGP PRIVATE KEY BLOCK-----"),
    ]
    out = [Planted(name, secrets if isinstance(secrets, tuple) else (secrets,), line) for name, secrets, line in entries]
    assert len({p.name for p in out}) == len(out) >= 100
    return out
