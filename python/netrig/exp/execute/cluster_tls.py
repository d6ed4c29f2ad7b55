"""The cluster's certificates: its CA, the bundles it issues, and Dask's TLS made of them.

Every member of a netrig cluster (the scheduler, each worker and its nanny, each head)
presents a certificate signed by the cluster's own CA and refuses a peer without one
(Dask's `distributed.Security`: TLS 1.3, CERT_REQUIRED both ways; Dask checks no host
name, so the CA is the whole of who may join). Whoever holds a certificate can run
commands as root on every worker: a certificate is given only to whom one would give
that.

- The CA lives in the cluster directory, `$NETRIG_CLUSTER_DIR` or
  `~/.config/netrig/cluster` (under sudo, the invoking user's when root's has none):
  `ca.key` and `ca.pem`, made by the first `netrig cluster scheduler`, with the
  scheduler's own bundle `scheduler.pem`. The directory is ours and 0700, its files 0600,
  none of them links: anything else is refused, since whoever can replace a file there
  chooses whom the cluster trusts.
- A bundle is one PEM file: a certificate, its CA's and its private key (0600).
  `netrig cluster cert NAME -o FILE` issues one for a machine without the CA; there a
  worker or head is given it with `--cert FILE` or `NETRIG_CLUSTER_CERT`. On the machine
  that holds the CA a worker or head needs neither: it is issued a certificate in memory.
- Keys are ECDSA P-256. The CA is valid CA_DAYS; a certificate CERT_DAYS (an expired one
  is refused with what to do).

It does not own which addresses are listened on or connected to (exp/execute/cluster.py).
"""

from __future__ import annotations

import datetime as dt
import os
import pwd
import re
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrig import safefs
from netrig.errors import NetrigError

DIR_ENV = "NETRIG_CLUSTER_DIR"
CERT_ENV = "NETRIG_CLUSTER_CERT"
CA_DAYS = 3650
CERT_DAYS = 365
RENEW_DAYS = 30  # the scheduler's own certificate is renewed when it has less left
SKEW = dt.timedelta(hours=1)  # a certificate is valid from an hour ago: clocks differ
CA_KEY, CA_CERT, SCHEDULER = "ca.key", "ca.pem", "scheduler.pem"
MAX_BUNDLE = 64_000  # bytes: a bundle is three PEM blocks
_PEM = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.+?\r?\n-----END \1-----\r?\n?", re.S)


class CertError(NetrigError):
    pass


@dataclass(frozen=True)
class Bundle:
    """A certificate of the cluster with its key and its CA's certificate (PEM text)."""

    ca: str
    cert: str
    key: str
    name: str  # the certificate's common name
    source: str  # where it came from, for messages
    not_after: dt.datetime

    def pem(self) -> bytes:
        """The bundle file: the certificate first, then its CA's, then the key."""
        return (self.cert + self.ca + self.key).encode()

    def security(self) -> Any:
        """Dask's Security for a head (a client): mutual TLS with this certificate."""
        from distributed.security import Security

        return Security(require_encryption=True, tls_min_version=_tls13(), tls_ca_file=self.ca,
                        **{f"tls_{role}_{part}": value for role in ("client", "worker", "scheduler")
                           for part, value in (("cert", self.cert), ("key", self.key))})

    def dask_config(self) -> dict[str, Any]:
        """The same as Dask configuration, for a scheduler or a worker and its nanny (the
        nanny hands its configuration and Security to the worker process it starts)."""
        cfg: dict[str, Any] = {"distributed.comm.require-encryption": True,
                               "distributed.comm.tls.min-version": 1.3,
                               "distributed.comm.tls.ca-file": self.ca}
        for role in ("client", "worker", "scheduler"):
            cfg[f"distributed.comm.tls.{role}.cert"] = self.cert
            cfg[f"distributed.comm.tls.{role}.key"] = self.key
        return cfg


def _tls13() -> Any:
    import ssl

    return ssl.TLSVersion.TLSv1_3


# --- the cluster directory --------------------------------------------------------------


def _home(uid: int) -> Path | None:
    try:
        return Path(pwd.getpwuid(uid).pw_dir)
    except KeyError:
        return None


def _sudo_uid() -> int | None:
    sudo = os.environ.get("SUDO_UID", "")
    return int(sudo) if os.geteuid() == 0 and sudo.isdigit() else None


def owners() -> set[int]:
    """Who may own the cluster directory and a bundle: us, and under sudo the user who
    ran it (who could become root anyway)."""
    sudo = _sudo_uid()
    return {os.geteuid()} | ({sudo} if sudo is not None else set())


def _who(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def cluster_dir(create: bool = False) -> Path:
    """The cluster directory: $NETRIG_CLUSTER_DIR, else ~/.config/netrig/cluster (under
    sudo, the invoking user's when root's holds no CA). Checked (`check_dir`); created
    0700 when `create` and missing."""
    if os.environ.get(DIR_ENV):
        return check_dir(Path(os.environ[DIR_ENV]), create)
    mine = (_home(os.geteuid()) or Path.home()) / ".config" / "netrig" / "cluster"
    sudo = _sudo_uid()
    if sudo is not None and not (mine / CA_KEY).exists():
        theirs = _home(sudo)
        if theirs is not None and (theirs / ".config/netrig/cluster" / CA_KEY).exists():
            return check_dir(theirs / ".config/netrig/cluster", False)
    return check_dir(mine, create)


def check_dir(d: Path, create: bool = False) -> Path:
    """`d` if it is a real directory of ours that no one else may enter (0700);
    CertError saying what is wrong otherwise. Created 0700 when `create` and missing."""
    d = Path(os.path.abspath(d))
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        if not create:
            return d  # (missing: what needs it says so)
        d.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(d, 0o700)
        st = os.lstat(d)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise CertError(f"{d}: the cluster directory is {'a symbolic link' if stat.S_ISLNK(st.st_mode) else 'not a directory'}; "
                        f"netrig keeps the cluster's CA key only in a real directory of its own "
                        f"(set {DIR_ENV} to another path)")
    if st.st_uid not in owners():
        raise CertError(f"{d}: the cluster directory belongs to {_who(st.st_uid)}, not to "
                        f"{_who(os.geteuid())}: whoever owns it chooses whom the cluster trusts; "
                        f"use a directory of your own ({DIR_ENV})")
    if st.st_mode & 0o077:
        raise CertError(f"{d}: the cluster directory is open to others (mode {stat.S_IMODE(st.st_mode):04o}); "
                        f"it holds the cluster's CA key: `chmod 700 {d}`")
    return d


def _read_private(path: Path, what: str) -> bytes:
    """A file holding a key: a regular file of ours (not a link to one), no one else's
    to read or write, at most MAX_BUNDLE bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise CertError(f"{path}: no such file ({what})") from None
    except OSError as e:
        if os.path.islink(path):
            raise CertError(f"{path}: a symbolic link; netrig reads {what} only from the file "
                            "itself (give its real path)") from None
        raise CertError(f"{path}: cannot be read ({e.strerror}): {what}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CertError(f"{path}: not a regular file ({what})")
        if st.st_uid not in owners() | {0}:
            raise CertError(f"{path}: belongs to {_who(st.st_uid)}, who could swap it for a key of "
                            f"their choosing ({what}): keep it as {_who(os.geteuid())}")
        if st.st_mode & 0o077:
            raise CertError(f"{path}: others may read or change it (mode {stat.S_IMODE(st.st_mode):04o}), "
                            f"and it holds a private key ({what}): `chmod 600 {path}`")
        data = f.read(MAX_BUNDLE + 1)
    if len(data) > MAX_BUNDLE:
        raise CertError(f"{path}: over {MAX_BUNDLE} bytes: not a certificate bundle ({what})")
    return data


# --- making certificates ------------------------------------------------------------------


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _name(cn: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn[:64])])


def _pem_key(key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _pem_cert(cert: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM).decode()


def make_ca(d: Path) -> None:
    """A new CA in `d` (ca.key 0600, ca.pem), which must hold none."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    name = _name(f"netrig cluster CA ({socket.gethostname()}, {now:%Y-%m-%d})")
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW).not_valid_after(now + dt.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True, crl_sign=True,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    safefs.write(d, CA_KEY, _pem_key(key), safefs.PRIVATE)
    safefs.write(d, CA_CERT, _pem_cert(cert), safefs.PRIVATE)


def _load_ca(d: Path) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    if not (d / CA_KEY).exists() and not (d / CA_CERT).exists():
        raise CertError(f"{d}: no cluster CA here ({CA_KEY}, {CA_CERT}); `netrig cluster scheduler` "
                        f"makes one the first time it starts (or set {DIR_ENV})")
    what = "the cluster's CA"
    try:
        key = serialization.load_pem_private_key(_read_private(d / CA_KEY, what), None)
        cert = x509.load_pem_x509_certificate(_read_private(d / CA_CERT, what))
    except ValueError as e:
        raise CertError(f"{d}: its CA files do not parse ({e}); remove the directory to make a "
                        "new CA (every certificate it issued stops working)") from None
    if cert.not_valid_after_utc < _now():
        raise CertError(f"{d / CA_CERT}: the cluster's CA expired on {cert.not_valid_after_utc:%Y-%m-%d}; "
                        "remove the directory to make a new one and issue new certificates")
    return key, cert


def issue(d: Path, name: str, days: int = CERT_DAYS) -> Bundle:
    """A fresh key and a certificate for `name`, signed by the CA in `d`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    if not name or len(name) > 64 or not name.isprintable():
        raise CertError(f"certificate name {name!r}: 1 to 64 printable characters (e.g. lab1)")
    ca_key, ca = _load_ca(d)
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    end = min(now + dt.timedelta(days=days), ca.not_valid_after_utc)
    cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - SKEW).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return Bundle(_pem_cert(ca), _pem_cert(cert), _pem_key(key), name, f"issued by the CA in {d}", end)


def scheduler_bundle(d: Path) -> Bundle:
    """The scheduler's bundle: made with the CA the first time (and renewed when it has
    less than RENEW_DAYS left)."""
    if not (d / CA_KEY).exists() and not (d / CA_CERT).exists():
        make_ca(d)
    path = d / SCHEDULER
    if path.exists() or path.is_symlink():
        b = read_bundle(path)
        if b.not_after - _now() > dt.timedelta(days=RENEW_DAYS):
            return b
    b = issue(d, f"scheduler {socket.gethostname()}")
    safefs.write(d, SCHEDULER, b.pem(), safefs.PRIVATE)
    return Bundle(b.ca, b.cert, b.key, b.name, str(path), b.not_after)


def write_bundle(b: Bundle, path: Path) -> None:
    """Writes a new bundle file, 0600; refuses a path where something is (a file, a link:
    never written through)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        raise CertError(f"{path}: something is there already{' (a symbolic link)' if path.is_symlink() else ''}; "
                        "netrig writes a key only into a new file: remove it or choose another name") from None
    except OSError as e:
        raise CertError(f"{path}: cannot be created ({e.strerror})") from None
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(b.pem())


# --- reading a bundle ---------------------------------------------------------------------


def read_bundle(path: Path) -> Bundle:
    """A bundle file, checked: ours and private, its certificate signed by the CA in it,
    its key the certificate's, neither expired."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    what = "a netrig cluster certificate bundle"
    data = _read_private(path, what)
    blocks = [(m.group(1).decode(), m.group(0)) for m in _PEM.finditer(data)]
    keys = [b for kind, b in blocks if kind.endswith("PRIVATE KEY")]
    try:
        certs = [x509.load_pem_x509_certificate(b) for kind, b in blocks if kind == "CERTIFICATE"]
        key = serialization.load_pem_private_key(keys[0], None) if len(keys) == 1 else None
    except (ValueError, TypeError) as e:
        raise CertError(f"{path}: does not parse as {what} ({e})") from None
    cas = [c for c in certs if _is_ca(c)]
    leaves = [c for c in certs if not _is_ca(c)]
    if key is None or len(cas) != 1 or len(leaves) != 1:
        raise CertError(f"{path}: not {what} (one certificate, its CA's and one private key, as "
                        "`netrig cluster cert NAME -o FILE` writes)")
    ca, cert = cas[0], leaves[0]
    try:
        cert.verify_directly_issued_by(ca)
    except (InvalidSignature, ValueError, TypeError) as e:
        raise CertError(f"{path}: its certificate was not signed by the CA in it ({type(e).__name__})") from None
    if _public(key) != _public(cert.public_key()):
        raise CertError(f"{path}: its private key is not its certificate's")
    name = cert.subject.rfc4514_string()
    now = _now()
    for c, who in ((cert, f"its certificate ({name})"), (ca, "its CA")):
        if c.not_valid_after_utc < now:
            raise CertError(f"{path}: {who} expired on {c.not_valid_after_utc:%Y-%m-%d %H:%M} UTC; "
                            "issue a new bundle with `netrig cluster cert NAME -o FILE` on the "
                            "machine that holds the cluster's CA")
        if c.not_valid_before_utc > now:
            raise CertError(f"{path}: {who} is valid only from {c.not_valid_before_utc:%Y-%m-%d %H:%M} "
                            "UTC: is this machine's clock right?")
    cn = cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
    return Bundle(_pem_cert(ca), _pem_cert(cert), _pem_key(key),
                  str(cn[0].value) if cn else name, str(path), cert.not_valid_after_utc)


def _is_ca(cert: Any) -> bool:
    from cryptography import x509

    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _public(k: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    pub = k.public_key() if hasattr(k, "private_bytes") else k
    return pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def find(cert: str | None, name: str) -> Bundle:
    """The certificate a worker or head presents: `cert` (--cert), else
    $NETRIG_CLUSTER_CERT, else one issued now (in memory) by the CA of this machine's
    cluster directory; CertError saying what to do when there is none."""
    path = cert or os.environ.get(CERT_ENV)
    if path:
        return read_bundle(Path(path))
    d = cluster_dir()
    if not (d / CA_KEY).exists():
        raise CertError(f"no cluster certificate: give --cert FILE (or set {CERT_ENV}), a bundle "
                        "made by `netrig cluster cert NAME -o FILE` on the machine that holds the "
                        f"cluster's CA (which netrig finds itself, in {d})")
    return issue(d, name)
