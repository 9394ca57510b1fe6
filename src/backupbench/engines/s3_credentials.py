"""Where S3 credentials come from, in the order the AWS CLI uses, and how they are kept secret.

Order: keys given as options (flags, recipe); an explicitly named profile (`--profile`);
the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN); the profile
named by AWS_PROFILE, else "default", in the shared credentials file (AWS_SHARED_CREDENTIALS_FILE
or ~/.aws/credentials) or the config file (AWS_CONFIG_FILE or ~/.aws/config).

The result holds the keys as SecretStr and says only *where* they came from; the keys
reach the load generator through its environment, never its argument list, and are
remembered by redaction.py, so no text printed, logged or stored can show them.
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from pydantic import SecretStr

from backupbench.errors import InputError
from backupbench.redaction import remember

DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class Credentials:
    access_key: SecretStr
    secret_key: SecretStr
    session_token: SecretStr | None
    source: str  # e.g. "environment", "profile 'lab' in ~/.aws/credentials"

    def __post_init__(self) -> None:
        # Hidden from here on in whatever the process prints, logs or stores (redaction.py).
        remember(*self.secrets())

    def env(self) -> dict[str, str]:
        """The load generator's environment entries (always all three, to override any inherited)."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key.get_secret_value(),
            "AWS_SECRET_ACCESS_KEY": self.secret_key.get_secret_value(),
            "AWS_SESSION_TOKEN": self.session_token.get_secret_value() if self.session_token else "",
        }

    def secrets(self) -> list[str]:
        """Values to mask wherever text could show them."""
        values = [self.access_key.get_secret_value(), self.secret_key.get_secret_value()]
        if self.session_token:
            values.append(self.session_token.get_secret_value())
        return [v for v in values if v]

    def __repr__(self) -> str:
        return f"Credentials(source={self.source!r})"


def _files(environ: Mapping[str, str], home: Path) -> tuple[Path, Path]:
    credentials = Path(environ.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials").expanduser()
    config = Path(environ.get("AWS_CONFIG_FILE") or home / ".aws" / "config").expanduser()
    return credentials, config


def _read_ini(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        # The message of a parse error quotes the offending line, which may hold a key.
        raise InputError(f"cannot read {path}: it is not a valid AWS credentials file ({type(exc).__name__})",
                         fix="fix the file, or give the keys in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY") from None
    return parser


def _profile_section(parser: configparser.ConfigParser, profile: str, config_file: bool) -> dict[str, str] | None:
    # In ~/.aws/config a profile other than default is "[profile NAME]".
    names = [profile] if not config_file or profile == "default" else [f"profile {profile}", profile]
    for name in names:
        if parser.has_section(name):
            return {k.lower(): v.strip() for k, v in parser.items(name)}
    return None


def _shown(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def _from_profile(profile: str, environ: Mapping[str, str], home: Path) -> tuple[Credentials | None, str | None, bool]:
    """(credentials, region, whether the profile exists at all). The credentials file wins
    over the config file, key by key, as in the AWS CLI."""
    cred_path, config_path = _files(environ, home)
    found = False
    keys: dict[str, str] = {}
    key_file: Path | None = None
    region = None
    for path, is_config in ((config_path, True), (cred_path, False)):
        if not path.is_file():
            continue
        section = _profile_section(_read_ini(path), profile, is_config)
        if section is None:
            continue
        found = True
        region = section.get("region") or region
        for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
            if section.get(name):
                keys[name] = section[name]
                if name == "aws_access_key_id":
                    key_file = path
    if keys.get("aws_access_key_id") and keys.get("aws_secret_access_key") and key_file is not None:
        token = keys.get("aws_session_token")
        return (Credentials(SecretStr(keys["aws_access_key_id"]), SecretStr(keys["aws_secret_access_key"]),
                            SecretStr(token) if token else None, f"profile {profile!r} in {_shown(key_file, home)}"),
                region, True)
    return None, region, found


def resolve(access_key: SecretStr | None, secret_key: SecretStr | None, profile: str | None,
            environ: Mapping[str, str], home: Path) -> tuple[Credentials, str | None]:
    """The credentials to use and the region a profile or the environment suggests.
    Raises InputError naming every place looked at when none has keys."""
    if access_key is not None and secret_key is not None:
        region = environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        return Credentials(access_key, secret_key, None, "options"), region
    if profile is not None:
        creds, region, found = _from_profile(profile, environ, home)
        if creds is None:
            cred_path, config_path = _files(environ, home)
            problem = "has no aws_access_key_id/aws_secret_access_key" if found else "does not exist"
            raise InputError(f"AWS profile {profile!r} {problem} (looked in {cred_path} and {config_path})",
                             fix="name a profile with keys, or give them in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
        return creds, environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or region
    env_key, env_secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if env_key and env_secret:
        token = environ.get("AWS_SESSION_TOKEN")
        return (Credentials(SecretStr(env_key), SecretStr(env_secret), SecretStr(token) if token else None,
                            "environment"),
                environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION"))
    name = environ.get("AWS_PROFILE") or "default"
    creds, region, _ = _from_profile(name, environ, home)
    if creds is not None:
        return creds, environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or region
    cred_path, _ = _files(environ, home)
    half = " (only one of AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY is set)" if (env_key or env_secret) else ""
    raise InputError(f"no S3 credentials found{half}: not in the environment, nor profile {name!r} in {cred_path}",
                     fix="export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use --profile NAME")
