"""TLS between the agent and its controllers, with the standard library's ssl only.

The agent serves TLS 1.2 or later with the certificate and key it is given (`--tls-cert`,
`--tls-key`), or plain HTTP only when told so in as many words (`--insecure-plain-http`): the
token and the S3 keys in the requests must never cross a network in clear by default.

A controller trusts an agent one of four ways (`Trust`), chosen by flags (or recipe keys):
- system       (the default) the system's CA store, and the certificate must name the address
               or host name the agent is reached by;
- ca           `--agent-ca FILE`: only the CAs (or self-signed certificates) in FILE, name checked
               as above; the system store is not consulted;
- fingerprint  `--agent-fingerprint sha256:HEX`: the agent's certificate must be one of those
               pinned; neither its chain nor its name is checked (the pin is its identity);
- plain        `--agent-insecure-plain-http`: no TLS at all.
The fingerprint is compared after the handshake and before a byte of the request (which
carries the token) is sent.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import os
import re
import ssl
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from backupbench.errors import InputError, RefusedError

FINGERPRINT_PREFIX = "sha256:"
# sha256:HEX, or openssl's own line (sha256 Fingerprint=AB:CD:...), with or without colons.
_FINGERPRINT = re.compile(r"(?i)sha256(?::| fingerprint=)((?:[0-9a-f]{2}:?){31}[0-9a-f]{2})")
_PEM_CERT = re.compile(r"-----BEGIN CERTIFICATE-----\r?\n.+?\r?\n-----END CERTIFICATE-----", re.S)
SYSTEM, CA, FINGERPRINT, PLAIN = "system", "ca", "fingerprint", "plain"
# How the choices are named where the user gave them: flags, or a recipe's [hosts] keys.
FLAG_NAMES = ("--agent-ca", "--agent-fingerprint", "--agent-insecure-plain-http")
RECIPE_NAMES = ("agent_ca", "agent_fingerprints", "agent_insecure_plain_http")
# What makes a certificate and its fingerprint (printed by `hosts agent-unit`, quoted in messages).
MAKE_CERT = ("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 "
             "-subj /CN={address} -addext subjectAltName=IP:{address} -keyout {key} -out {cert}")


class AgentTrustError(RefusedError):
    """The agent's certificate is not the one trusted: nothing was sent to it."""


# ---- the agent's side -----------------------------------------------------------------------

def fingerprint_of_der(der: bytes) -> str:
    return FINGERPRINT_PREFIX + hashlib.sha256(der).hexdigest()


def cert_fingerprint(cert: Path) -> str:
    """sha256:HEX of the first certificate in a PEM file (the agent's own, before its chain)."""
    try:
        text = cert.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise InputError(f"--tls-cert {cert}: {exc.strerror}") from None
    found = _PEM_CERT.search(text)
    if found is None:
        raise InputError(f"--tls-cert {cert} holds no PEM certificate", "give the certificate file (-----BEGIN "
                         "CERTIFICATE-----), e.g. made with: " + MAKE_CERT.format(address="ADDR", key="KEY",
                                                                                    cert="CERT"))
    return fingerprint_of_der(ssl.PEM_cert_to_DER_cert(found.group(0)))


def _check_key_file(key: Path) -> None:
    """The private key must not be readable by every user (group-readable is the Debian ssl-cert
    way and is allowed)."""
    try:
        info = os.stat(key)
    except OSError as exc:
        raise InputError(f"--tls-key {key}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise RefusedError(f"--tls-key {key} is not a regular file", "name the key file itself")
    if info.st_mode & 0o007:
        raise RefusedError(f"--tls-key {key} has mode {stat.S_IMODE(info.st_mode):04o}: every user may read it",
                           f"chmod 600 {key}")


def _no_password() -> bytes:
    raise InputError("the key is encrypted", "give the agent an unencrypted key file (mode 0600)")


def server_context(cert: Path, key: Path) -> tuple[ssl.SSLContext, str]:
    """The agent's TLS context (TLS 1.2 or later) and its certificate's fingerprint."""
    _check_key_file(key)
    fingerprint = cert_fingerprint(cert)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key, password=_no_password)
    except InputError as exc:
        raise InputError(f"--tls-key {key}: {exc.message}", exc.fix) from None
    except (ssl.SSLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc.strerror or str(exc)
        raise InputError(f"--tls-cert {cert} / --tls-key {key} cannot be used: {reason}",
                         "give a PEM certificate and the unencrypted PEM key it was made with") from None
    return context, fingerprint


# ---- the controller's side ------------------------------------------------------------------

def parse_fingerprint(text: str, name: str = FLAG_NAMES[1]) -> str:
    """sha256:HEX (64 hex digits, with or without ':' between bytes, any case) -> sha256:hex."""
    found = _FINGERPRINT.fullmatch(text.strip())
    if found is None:
        raise InputError(f"{name} {text!r} is not sha256:<64 hex digits>",
                         "copy it from the agent's start line (backupbench agent ... prints it), or run "
                         "openssl x509 -in CERT -noout -fingerprint -sha256")
    return FINGERPRINT_PREFIX + found.group(1).replace(":", "").lower()


def _client_context(ca_file: Path | None, name: str) -> ssl.SSLContext:
    if ca_file is None:
        context = ssl.create_default_context()
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)   # hostname checked, certificate required
        try:
            context.load_verify_locations(cafile=str(ca_file))
        except FileNotFoundError:
            raise InputError(f"{name} {ca_file} does not exist") from None
        except (ssl.SSLError, OSError) as exc:
            raise InputError(f"{name} {ca_file} holds no usable PEM certificate ({getattr(exc, 'reason', None) or exc})",
                             "give the CA certificate that signed the agents' certificates, or their own "
                             "certificates") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _pinning_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE   # the fingerprint is checked instead, before anything is sent
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


@dataclass(frozen=True)
class Trust:
    """How a controller trusts the agents it calls (see the module's docstring)."""

    mode: str = SYSTEM
    ca_file: Path | None = None
    fingerprints: tuple[str, ...] = ()
    names: tuple[str, str, str] = FLAG_NAMES
    _context: list[ssl.SSLContext] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def choose(cls, ca_file: Path | str | None = None, fingerprints: Sequence[str] = (), plain: bool = False,
               names: tuple[str, str, str] = FLAG_NAMES) -> "Trust":
        """The one way given (none: the system's CAs); InputError for two, or a bad value. A CA
        file is read now, so a bad one fails before anything runs."""
        given = [name for name, value in zip(names, (ca_file, fingerprints, plain)) if value]
        if len(given) > 1:
            raise InputError(f"{' and '.join(given)} do not go together", "choose one way to trust the agents")
        if plain:
            return cls(PLAIN, names=names)
        if fingerprints:
            pins = tuple(dict.fromkeys(parse_fingerprint(text, names[1]) for text in fingerprints))
            return cls(FINGERPRINT, fingerprints=pins, names=names)
        trust = cls(CA if ca_file else SYSTEM, Path(ca_file) if ca_file else None, names=names)
        trust.context()
        return trust

    def context(self) -> ssl.SSLContext:
        if not self._context:   # made once, then shared by every call (an SSLContext is thread-safe)
            made = _pinning_context() if self.mode == FINGERPRINT else _client_context(self.ca_file, self.names[0])
            self._context.append(made)
        return self._context[0]

    def connection(self, host: str, port: int, timeout: float) -> http.client.HTTPConnection:
        if self.mode == PLAIN:
            return http.client.HTTPConnection(host, port, timeout=timeout)
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=self.context())

    def untrusted_fix(self) -> str:
        if self.mode == CA:
            return (f"{self.names[0]} must hold the CA that signed the agent's certificate (or the certificate "
                    "itself), and the certificate must name the address used here (subjectAltName IP:ADDR or DNS:NAME)")
        return (f"give {self.names[0]} CA_FILE (the CA that signed the agent's certificate, or the certificate "
                f"itself) or {self.names[1]} sha256:... (the agent prints it when it starts)")

    def check_peer(self, conn: http.client.HTTPConnection, address: str) -> None:
        """After the handshake, before the request: the certificate is one of those pinned."""
        if self.mode != FINGERPRINT:
            return
        der = conn.sock.getpeercert(binary_form=True) if isinstance(conn.sock, ssl.SSLSocket) else None
        seen = fingerprint_of_der(der) if der else "none"
        if not any(hmac.compare_digest(seen, pin) for pin in self.fingerprints):
            raise AgentTrustError(f"agent {address} presented certificate {seen}, not the one pinned with "
                                  f"{self.names[1]}; nothing was sent to it",
                                  "if the agent's certificate was replaced, pin the fingerprint its start line "
                                  "prints now")
