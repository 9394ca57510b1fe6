"""Certificates for tests (and benchmarks) of the agent's TLS, made with the openssl command.

`self_signed(folder, address)` makes one certificate naming `address` (subjectAltName IP) and its
key; `Authority(folder)` makes a CA that `issue(address)`s such certificates. Every file is made
in `folder` (a test's temporary folder), keys with mode 0600; nothing else is touched. EC P-256
keys: made in milliseconds.
"""

from __future__ import annotations

import hashlib
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"
_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", DAYS]


@dataclass(frozen=True)
class Cert:
    cert: Path
    key: Path

    @property
    def fingerprint(self) -> str:
        """sha256:hex of the certificate, as the agent prints it and --agent-fingerprint takes it."""
        der = ssl.PEM_cert_to_DER_cert(self.cert.read_text())
        return "sha256:" + hashlib.sha256(der).hexdigest()

    def agent_args(self) -> list[str]:
        return ["--tls-cert", str(self.cert), "--tls-key", str(self.key)]


def _openssl(*args: str) -> None:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def _names(address: str) -> str:
    kind = "DNS" if any(c.isalpha() for c in address) and ":" not in address else "IP"
    return f"subjectAltName={kind}:{address}"


def self_signed(folder: Path, address: str, name: str = "agent") -> Cert:
    made = Cert(folder / f"{name}.pem", folder / f"{name}.key")
    _openssl("req", "-x509", *_KEY, "-subj", f"/CN={address}", "-addext", _names(address),
             "-keyout", str(made.key), "-out", str(made.cert))
    made.key.chmod(0o600)
    return made


class Authority:
    """A throwaway CA: `ca` is what --agent-ca takes."""

    def __init__(self, folder: Path, name: str = "test-ca"):
        self.folder = folder
        self.ca = folder / f"{name}.pem"
        self._key = folder / f"{name}.key"
        _openssl("req", "-x509", *_KEY, "-subj", f"/CN=backupbench {name}", "-keyout", str(self._key),
                 "-out", str(self.ca))
        self._key.chmod(0o600)

    def issue(self, address: str, name: str) -> Cert:
        made = Cert(self.folder / f"{name}.pem", self.folder / f"{name}.key")
        _openssl("req", "-x509", "-CA", str(self.ca), "-CAkey", str(self._key), *_KEY, "-subj", f"/CN={address}",
                 "-addext", _names(address), "-addext", "basicConstraints=critical,CA:FALSE",
                 "-keyout", str(made.key), "-out", str(made.cert))
        made.key.chmod(0o600)
        return made
