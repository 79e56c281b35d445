"""`sluice server --multi-host`: the services listen on the network, each behind its own tool's authentication.

- Prefect: the API auth string (PREFECT_SERVER_API_AUTH_STRING on the server; clients send PREFECT_API_AUTH_STRING
  as HTTP basic auth, and anything else gets 401).
- MLflow: its `basic-auth` app (`mlflow server --app-name basic-auth`): an admin user made on first start from
  MLFLOW_AUTH_ADMIN_USERNAME / MLFLOW_AUTH_ADMIN_PASSWORD in a user database of its own; clients send
  MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD, and anything else gets 401.
- Dask: TLS both ways (flows/dask_tls.py): the scheduler and workers admit only peers with a certificate signed by
  the cluster's CA.
- Prefect and MLflow serve HTTPS (uvicorn's TLS) with the web certificate of `sluice secrets`, so the credentials
  and every artifact cross the network encrypted; their clients verify it against the cluster's CA
  (PREFECT_API_SSL_CERT_FILE, MLFLOW_TRACKING_SERVER_CERT_PATH).

The server takes the credentials from the same variables the clients read, so one env file (`sluice secrets`'
credentials.env) serves both. Without --multi-host the server listens on loopback only: any other --host is
refused, since whoever reached the ports would run flows, read the runs and execute code on the workers.
"""
from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from flows.dask_tls import tls_env
from services.cluster_secrets import CA_CERT, CREDENTIALS, NODE_CERT, NODE_KEY, WEB_CERT, WEB_KEY, certificate_names

AUTH_STRING_ENV = "PREFECT_API_AUTH_STRING"
# the CA file each HTTPS client verifies the servers' certificate with
CA_FILE_ENVS = ("PREFECT_API_SSL_CERT_FILE", "MLFLOW_TRACKING_SERVER_CERT_PATH")
USERNAME_ENV, PASSWORD_ENV = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"
MIN_PASSWORD = 12           # MLflow's own rule for a user's password (mlflow.utils.validation)
MLFLOW_AUTH_CONFIG, MLFLOW_USERS_DB = "mlflow-auth.ini", "mlflow-auth.db"     # in the server's state folder


@dataclass(frozen=True)
class Credentials:
    auth_string: str
    username: str
    password: str

    def client_env(self) -> dict[str, str]:
        return {AUTH_STRING_ENV: self.auth_string, USERNAME_ENV: self.username, PASSWORD_ENV: self.password}


def credentials_from_environment() -> tuple[Credentials | None, list[str]]:
    """The credentials, or the problems with them (one line each)."""
    values = {name: os.environ.get(name, "") for name in (AUTH_STRING_ENV, USERNAME_ENV, PASSWORD_ENV)}
    problems = [f"{name} is not set" for name, value in values.items() if not value]
    if values[PASSWORD_ENV] and len(values[PASSWORD_ENV]) < MIN_PASSWORD:
        problems.append(f"{PASSWORD_ENV} has {len(values[PASSWORD_ENV])} characters; MLflow wants {MIN_PASSWORD} "
                        f"at least")
    if problems:
        return None, problems + [f"make them with `sluice secrets DIR` and load them (set -a; . DIR/{CREDENTIALS}; "
                                 f"set +a), or set your own"]
    return Credentials(*values.values()), []


def https_client_env(certs: Path) -> dict[str, str]:
    """What a Prefect or MLflow client needs to trust the servers' certificate."""
    return {variable: str(certs.resolve() / CA_CERT) for variable in CA_FILE_ENVS}


def web_certificate_problems(certs: Path, host: str) -> list[str]:
    """Why the web certificate in `certs` cannot serve HTTPS at `host` (nothing if it can)."""
    if missing := [name for name in (CA_CERT, WEB_CERT, WEB_KEY) if not (certs / name).exists()]:
        return [f"--certs {certs} lacks {', '.join(missing)}: make the secrets with `sluice secrets DIR --host {host}`"]
    names = certificate_names(certs / WEB_CERT)
    if host not in names:
        return [f"--certs {certs}: {WEB_CERT} is valid for {', '.join(names) or 'no host'}, not {host}, where the "
                f"clients reach the servers: make the secrets with `sluice secrets DIR --host {host}`"]
    return []


def host_problems(host: str, multi_host: bool) -> list[str]:
    """Loopback unless --multi-host; with it, an address other machines can use (every client setting names it)."""
    if not multi_host:
        return [] if on_loopback(host) else [
            f"--host {host} listens beyond this machine, where anyone who reaches the ports could use Prefect, "
            f"MLflow and Dask without credentials: add --multi-host (Prefect's auth string, MLflow's basic auth, "
            f"Dask's TLS; docs/operations.md, 'Multi-host mode'), or keep --host 127.0.0.1"]
    if _is_wildcard(host):
        return [f"--host {host}: give the address the other machines reach this one at (an IP or a name): the "
                f"services listen there and the client settings printed name it"]
    return []


def on_loopback(host: str) -> bool:
    """Every address the name resolves to is a loopback one (127.0.0.0/8, ::1)."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return False
    return bool(found) and all(ipaddress.ip_address(address.split("%")[0]).is_loopback for address in found)


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def mlflow_auth_config(folder: Path) -> str:
    """MLflow's basic-auth configuration (MLFLOW_AUTH_CONFIG_PATH), its user database in `folder`. No password:
    the admin's comes from MLFLOW_AUTH_ADMIN_PASSWORD, and only on the database's first start. READ is MLflow's
    default permission for users the admin adds."""
    return (f"[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///{folder / MLFLOW_USERS_DB}\n"
            f"authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")


def mlflow_login_refused(folder: Path) -> str:
    return (f"the MLflow server refused {USERNAME_ENV} / {PASSWORD_ENV}: its user database ({folder / MLFLOW_USERS_DB})"
            f" keeps the admin password it was first started with. Use that one, change it with MLflow's "
            f"update-password API, or delete the database (MLflow's users and permissions go with it)")


def client_instructions(urls: dict[str, str], credentials: Credentials, certs: Path) -> str:
    """What another machine sets to use the services: secrets are named, never printed."""
    lines = [f"On another machine: copy {CREDENTIALS}, and {CA_CERT}, {NODE_CERT}, {NODE_KEY} from {certs} (to the "
             f"same path, or change the paths below), then",
             f"  set -a; . {CREDENTIALS}; set +a      # {AUTH_STRING_ENV}, {USERNAME_ENV}={credentials.username}, "
             f"{PASSWORD_ENV}",
             f"  export PREFECT_API_URL={urls['Prefect API']}",
             f"  export MLFLOW_TRACKING_URI={urls['MLflow UI']}"]
    lines += [f"  export {variable}={path}" for variable, path in (https_client_env(certs) | tls_env(certs)).items()]
    if "Dask scheduler" in urls:
        lines += [f"  sluice run RECIPE --dask-address {urls['Dask scheduler']}",
                  f"  dask worker {urls['Dask scheduler']} --host THIS_MACHINE --dashboard-address 127.0.0.1:0   "
                  f"# a worker there (docs/operations.md)"]
    return "\n".join(lines)
