"""`sluice secrets DIR`: what a multi-host `sluice server` and its clients authenticate with, made in one folder.

- Dask's TLS certificates: a certificate authority (`ca.pem`; its key `ca-key.pem` only signs, and stays with
  whoever made the folder), a certificate for the scheduler and one for the nodes (every Dask worker, and every
  process that opens a Dask client: `sluice run`, the deployments process). Dask admits a connection whose peer
  shows a certificate signed by the CA; it does not check host names (`distributed.security`: "a dedicated CA for
  the cluster and people using IP addresses"), so the certificates name no host and one node certificate serves
  every machine.
- A certificate for the Prefect and MLflow servers (`web.pem`), which serve HTTPS in multi-host mode. Browsers and
  HTTP clients do check host names: it names the addresses the servers are reached at (`--host`, repeated: the
  address the other machines use, and any name such as compose's service names), and this machine's loopback.
- `credentials.env`: a random Prefect API auth string and MLflow admin password, in the variables the clients
  read (PREFECT_API_AUTH_STRING, MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD); `sluice server --multi-host`
  reads the same variables. Also the key the MLflow server signs its UI's CSRF tokens with
  (MLFLOW_FLASK_SERVER_SECRET_KEY, which docker compose cannot make up); clients ignore it, and it gives nothing the
  admin password does not.

Keys and credentials are written readable by their owner only, and nothing is overwritten unless asked (`force`):
making a folder again locks out every machine that holds the old one.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from flows.dask_tls import CA_CERT, CA_KEY, NODE_CERT, NODE_KEY, SCHEDULER_CERT, SCHEDULER_KEY

CREDENTIALS = "credentials.env"
WEB_CERT, WEB_KEY = "web.pem", "web-key.pem"
LOOPBACK_NAMES = ("localhost", "127.0.0.1")
MLFLOW_ADMIN = "admin"
FILES = (CA_CERT, CA_KEY, SCHEDULER_CERT, SCHEDULER_KEY, NODE_CERT, NODE_KEY, WEB_CERT, WEB_KEY, CREDENTIALS)


class SecretsExist(FileExistsError):
    """The folder already holds a cluster's secrets."""


def make_cluster_secrets(folder: Path, days: int = 365, hosts: Sequence[str] = (), force: bool = False) -> list[Path]:
    """Write the CA, the scheduler's and the nodes' certificates, the web servers' for `hosts` and loopback (all
    valid `days`) and the credentials, replacing the folder's own with `force`; returns the files written."""
    existing = [folder / name for name in FILES if (folder / name).exists()]
    if existing and not force:
        raise SecretsExist(f"{folder} already holds {', '.join(path.name for path in existing)}: give another folder, "
                           f"or --force to replace them (every machine then needs the new ones)")
    for path in existing:
        path.unlink()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_key = _new_key()
    ca_cert = _certificate("sluice cluster CA", ca_key.public_key(), ca_key, None, days)
    written = [_write(folder / CA_CERT, _pem(ca_cert), 0o644), _write(folder / CA_KEY, _key_pem(ca_key), 0o600)]
    for name, cert_file, key_file, names in (("sluice dask scheduler", SCHEDULER_CERT, SCHEDULER_KEY, ()),
                                             ("sluice dask node", NODE_CERT, NODE_KEY, ()),
                                             ("sluice web servers", WEB_CERT, WEB_KEY,
                                              tuple(dict.fromkeys([*hosts, *LOOPBACK_NAMES])))):
        key = _new_key()
        certificate = _certificate(name, key.public_key(), ca_key, ca_cert, days, names)
        written += [_write(folder / cert_file, _pem(certificate), 0o644),
                    _write(folder / key_file, _key_pem(key), 0o600)]
    written.append(_write(folder / CREDENTIALS, credentials_text().encode(), 0o600))
    return written


def credentials_text() -> str:
    """Fresh random credentials as an env file (KEY=value lines: POSIX shells and `docker compose --env-file`)."""
    return (f"# The credentials of a sluice multi-host cluster (`sluice secrets`). Keep them secret; load them with\n"
            f"#   set -a; . {CREDENTIALS}; set +a\n"
            f"PREFECT_API_AUTH_STRING={secrets.token_urlsafe(32)}\n"
            f"MLFLOW_TRACKING_USERNAME={MLFLOW_ADMIN}\n"
            f"MLFLOW_TRACKING_PASSWORD={secrets.token_urlsafe(24)}\n"
            f"MLFLOW_FLASK_SERVER_SECRET_KEY={secrets.token_hex(32)}\n")


def _new_key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def certificate_names(path: Path) -> list[str]:
    """The host names and addresses a certificate is valid for (its subject alternative names; none if it has
    none, as a certificate made for Dask alone)."""
    from cryptography import x509

    try:
        names = x509.load_pem_x509_certificate(path.read_bytes()).extensions.get_extension_for_class(
            x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(name.value) for name in names]


def _certificate(common_name: str, public_key, signing_key, issuer, days: int, names: Sequence[str] = ()):
    """The CA's own certificate when `issuer` is None; otherwise one signed by the CA, for both ends of a
    connection (a worker listens for its peers and connects to the scheduler), valid for the host `names` if any
    (IP addresses or DNS names)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    is_ca = issuer is None
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(subject if is_ca else issuer.subject).public_key(public_key)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))     # a peer whose clock is a little behind
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=0 if is_ca else None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=is_ca, crl_sign=is_ca,
                                            content_commitment=False, key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False, decipher_only=False),
                              critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signing_key.public_key()),
                              critical=False))
    if not is_ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                               ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName([_general_name(name) for name in names]),
                                        critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def _general_name(name: str):
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _pem(certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _write(path: Path, content: bytes, mode: int) -> Path:
    """Created with its mode from the start: a key is never readable by others, not even for a moment."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as handle:
        handle.write(content)
    return path
