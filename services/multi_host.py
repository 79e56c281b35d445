"""`sluice server --multi-host`: the services listen on the network, each behind its own tool's authentication.

- Prefect: the API auth string (PREFECT_SERVER_API_AUTH_STRING on the server; clients send PREFECT_API_AUTH_STRING
  as HTTP basic auth, and anything else gets 401).
- MLflow: its `basic-auth` app (`mlflow server --app-name basic-auth`): an admin user made on first start from
  MLFLOW_AUTH_ADMIN_USERNAME / MLFLOW_AUTH_ADMIN_PASSWORD in a user database of its own; clients send
  MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD, and anything else gets 401.
- Dask: TLS both ways (flows/dask_tls.py): the scheduler and workers admit only peers with a certificate signed by
  the cluster's CA.

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
from services.cluster_secrets import CA_CERT, CREDENTIALS, NODE_CERT, NODE_KEY

AUTH_STRING_ENV = "PREFECT_API_AUTH_STRING"
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


def client_instructions(urls: dict[str, str], credentials: Credentials, certs: Path | None) -> str:
    """What another machine sets to use the services: secrets are named, never printed."""
    copied = f"{CREDENTIALS}" + (f", and {CA_CERT}, {NODE_CERT}, {NODE_KEY} from {certs}" if certs else "")
    lines = [f"On another machine: copy {copied} (to the same path, or change the paths below), then",
             f"  set -a; . {CREDENTIALS}; set +a      # {AUTH_STRING_ENV}, {USERNAME_ENV}={credentials.username}, "
             f"{PASSWORD_ENV}",
             f"  export PREFECT_API_URL={urls['Prefect API']}",
             f"  export MLFLOW_TRACKING_URI={urls['MLflow UI']}"]
    if certs:
        lines += [f"  export {variable}={path}" for variable, path in tls_env(certs).items()]
        lines += [f"  sluice run RECIPE --dask-address {urls['Dask scheduler']}",
                  f"  dask worker {urls['Dask scheduler']} --host THIS_MACHINE --dashboard-address 127.0.0.1:0   "
                  f"# a worker there (docs/operations.md)"]
    return "\n".join(lines)
