"""What the agent checks before it listens: the token file, the root folder, the address.

The token file must be a regular file (not a symlink) owned by the user running the agent
and readable by nobody else (mode 0600 or stricter): a token others can read is no secret,
and a symlink could be swapped for another file between the check and the read. It is
opened once with O_NOFOLLOW and checked on the open descriptor, so what is checked is
what is read.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from pathlib import Path

from backupbench.errors import InputError, RefusedError
from backupbench.redaction import redact_url

MIN_TOKEN_CHARS = 16
MAX_TOKEN_BYTES = 4096


def load_token(path: Path | str) -> bytes:
    """The shared token (surrounding whitespace dropped), or a typed error saying why not."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(f"token file {path} does not exist", "create it: umask 077; openssl rand -hex 32 > FILE") from None
    except OSError as exc:
        if os.path.islink(path):
            raise RefusedError(f"token file {path} is a symlink", "name the file itself") from None
        raise InputError(f"cannot open token file {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        _check_token_file(path, info)
        data = os.read(fd, MAX_TOKEN_BYTES + 1)
    finally:
        os.close(fd)
    token = data.strip()
    if len(data) > MAX_TOKEN_BYTES:
        raise InputError(f"token file {path} is over {MAX_TOKEN_BYTES} bytes", "put only the token in it")
    if len(token) < MIN_TOKEN_CHARS or any(c < 0x21 or c > 0x7E for c in token):
        raise InputError(f"token file {path} must hold one token of at least {MIN_TOKEN_CHARS} printable characters",
                         "e.g. openssl rand -hex 32 > FILE")
    return token


def _check_token_file(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise RefusedError(f"token file {path} is not a regular file", "name a regular file")
    if info.st_uid != os.geteuid():
        raise RefusedError(f"token file {path} belongs to uid {info.st_uid}, not to this user ({os.geteuid()})",
                           "chown it to the user running the agent")
    if info.st_mode & 0o077:
        raise RefusedError(f"token file {path} has mode {stat.S_IMODE(info.st_mode):04o}: others may read it",
                           f"chmod 600 {path}")


def check_root(path: Path | str) -> Path:
    """The root every job works under, resolved once (symlinks followed now, not later). It must be
    named absolute: a relative one (or an empty one, which means the current folder) would depend on
    where the agent happened to be started."""
    text = str(path)
    if not text.strip():
        raise InputError("--root is empty", "name the folder the jobs work under, e.g. --root /srv/backupbench")
    if not Path(text).is_absolute():
        raise InputError(f"--root {text!r} is relative: it would depend on the folder the agent was started in",
                         f"give the absolute path, e.g. --root {Path.cwd() / text}")
    resolved = Path(os.path.realpath(text))
    if not resolved.is_dir():
        raise InputError(f"--root {text} is not a folder", "name an existing folder on the storage to test")
    if resolved == Path("/"):
        raise RefusedError("--root / would let jobs work anywhere", "name a folder made for the agent's jobs")
    return resolved


def listen_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The address `host` names, an IPv4-mapped IPv6 address as the IPv4 address it is (so
    [::ffff:0.0.0.0] is 0.0.0.0); ValueError if it is no IP address. Only ipaddress's own
    spellings are taken: '0' or '127.1', which the socket functions would read as addresses,
    are not."""
    address = ipaddress.ip_address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def parse_listen(text: str) -> tuple[str, int]:
    """ADDR:PORT (or [IPV6]:PORT) -> (address, port). The address must be one IP address of
    this host: a wildcard, however written (0.0.0.0, ::, [::ffff:0.0.0.0], ::%eth0), would
    serve every network the host is on."""
    host, sep, port_text = text.rpartition(":")
    # Each part quoted as a URL would be (also --agents, whose items are mistyped URLs at times):
    # nothing after a '?' or '#', which may be a query or fragment holding a secret.
    shown = redact_url(text)
    if not sep or not host:
        raise InputError(f"--listen {shown!r} is not ADDR:PORT", "e.g. --listen 10.0.0.5:7480")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = listen_address(host)
    except ValueError:
        raise InputError(f"--listen: {redact_url(host)!r} is not an IP address",
                         "give the address itself, e.g. 10.0.0.5") from None
    if address.is_unspecified:
        raise RefusedError(f"--listen {shown}: {redact_url(host)} would listen on every address of this host",
                           "name the one address the controller reaches this host on")
    # ASCII digits only: str.isdigit() would take other scripts' digits, which int() reads.
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or int(port_text) > 65535:
        raise InputError(f"--listen: port {redact_url(port_text)!r} is not 0-65535", "e.g. --listen 10.0.0.5:7480")
    return str(address), int(port_text)
