"""Dagster as a service for the production tests: a PostgreSQL database, a code server, the daemon
and the webserver as subprocesses, and a small GraphQL client to drive them like the UI does.

Every wait is bounded and a timeout says what was awaited, what was seen last, and the tail of
each process's log.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

EVERY_MINUTE = "* * * * *"

REPO = Path(__file__).resolve().parents[2]
LOCATION = "memory_pipeline"
REPOSITORY = "__repository__"
PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_USERS = ("postgres", "root")
STOP_TIMEOUT_S = 20
CODE_SERVER_TIMEOUT_S = 120


class WaitTimeout(AssertionError):
    pass


class GraphQLError(Exception):
    """The webserver answered with errors (e.g. while it reloads the code location)."""


class RunsFailed(Exception):
    """A run failed: waiting longer will not turn it into a success."""


def no_failures(found: list[dict], what: str) -> None:
    failed = [(r["runId"], r["jobName"], r["status"]) for r in found if r["status"] in {"FAILURE", "CANCELED"}]
    if failed:
        raise RunsFailed(f"{what}: runs failed: {failed} (their steps' errors are in the code-server log)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- PostgreSQL ---------------------------------------------------------------------------------
def pg_admin_connection():
    """A superuser connection to the server, or None with the reason it could not be made."""
    import psycopg2

    errors = []
    for user in PG_USERS:
        for dbname in ("postgres", "test"):
            try:
                conn = psycopg2.connect(host=PG_HOST, port=PG_PORT, user=user, dbname=dbname, connect_timeout=5)
                conn.autocommit = True
                return conn, user
            except psycopg2.OperationalError as exc:
                errors.append(f"{user}@{dbname}: {str(exc).strip()}")
    return None, "; ".join(errors)


def create_database(conn) -> str:
    name = f"mp_e2e_{secrets.token_hex(4)}"
    with conn.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(conn, name: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- processes ----------------------------------------------------------------------------------
@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text[-lines:])


def start_process(name: str, args: list[str], env: dict[str, str], cwd: Path, logs: Path) -> Proc:
    """Starts ``args`` in a new session (its own process group) with output to ``logs/name.log``."""
    log = logs / f"{name}.log"
    with open(log, "wb") as out:
        popen = subprocess.Popen(
            args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return Proc(name, popen, log)


def stop_process(proc: Proc, timeout: float = STOP_TIMEOUT_S) -> str:
    """SIGTERM, wait, then SIGKILL the whole process group (run workers included)."""
    pgid = proc.popen.pid  # start_new_session: the group id is the leader's pid
    started = time.monotonic()
    if proc.popen.poll() is None:
        proc.popen.send_signal(signal.SIGTERM)
        try:
            proc.popen.wait(timeout)
            outcome = f"{proc.name} stopped in {time.monotonic() - started:.1f}s (exit {proc.popen.returncode})"
        except subprocess.TimeoutExpired:
            outcome = f"{proc.name} did not stop in {timeout}s: killed"
    else:
        outcome = f"{proc.name} had already exited ({proc.popen.returncode})"
    try:
        os.killpg(pgid, signal.SIGKILL)  # children left behind by a stopped leader
    except ProcessLookupError:
        pass
    if proc.popen.poll() is None:
        proc.popen.wait(5)
    return outcome


def group_alive(proc: Proc, grace: float = 5.0) -> bool:
    """Whether any process of the group is left (killed members may take a moment to go)."""
    deadline = time.monotonic() + grace
    while True:
        try:
            os.killpg(proc.popen.pid, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.2)


def bin_path(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise RuntimeError(f"{name} is not installed next to {sys.executable} nor on PATH")
    return found


# -- the service --------------------------------------------------------------------------------
@dataclass
class DagsterService:
    home: Path
    root: Path
    lance_uri: str
    env: dict[str, str]
    web_port: int
    procs: list[Proc] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def logs(self, lines: int = 40) -> str:
        parts = []
        for proc in self.procs:
            state = "running" if proc.popen.poll() is None else f"exited {proc.popen.returncode}"
            parts.append(f"----- {proc.name} ({state}), last {lines} lines of {proc.log} -----\n{proc.tail(lines)}")
        return "\n".join(parts)

    def graphql(self, query: str, variables: dict | None = None, timeout: float = 30) -> dict[str, Any]:
        response = requests.post(f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=timeout)
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise GraphQLError(f"GraphQL errors: {body['errors']}")
        return body["data"]

    def wait_for(self, what: str, probe: Callable[[], tuple[bool, Any]], timeout: float, every: float = 2.0) -> Any:
        """Calls ``probe`` until it returns (True, value); fails with the last value and the logs."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.popen.poll() is not None:
                    raise AssertionError(f"{proc.name} exited ({proc.popen.returncode}) while waiting for {what}\n{self.logs()}")
            try:
                done, last = probe()
            except (requests.RequestException, GraphQLError) as exc:  # transient: try again
                done, last = False, f"{type(exc).__name__}: {exc}"
            except Exception as exc:
                raise AssertionError(f"while waiting for {what}: {exc}\n{self.logs()}") from exc
            if done:
                return last
            time.sleep(every)
        raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last}\n{self.logs()}")


# How the GraphQL API stops each kind of automation: its mutation, the type of a successful answer,
# and the state that answer holds.
STOP = {
    "schedule": ("stopRunningSchedule", "ScheduleStateResult", "scheduleState"),
    "sensor": ("stopSensor", "StopSensorMutationResult", "instigationState"),
}


def stop_automation(service: DagsterService, kind: str, state_id: str) -> None:
    """Stops a schedule or a sensor (``kind``) through the GraphQL API, as its switch in the UI does."""
    mutation, answer, state = STOP[kind]
    query = (
        f"mutation Stop($id: String) {{ {mutation}(id: $id) {{ __typename "
        f"... on {answer} {{ {state} {{ status }} }} ... on PythonError {{ message }} }} }}"
    )
    stopped = service.graphql(query, {"id": state_id})[mutation]
    assert stopped.get(state, {}).get("status") == "STOPPED", stopped


def write_home(home: Path, code_port: int) -> None:
    """DAGSTER_HOME: the production deploy/dagster.yaml as it is, and a workspace naming the code server."""
    home.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
    (home / "workspace.yaml").write_text(
        "load_from:\n"
        "  - grpc_server:\n"
        "      host: 127.0.0.1\n"
        f"      port: {code_port}\n"
        f"      location_name: {LOCATION}\n"
    )


def start_service(base: Path, db_name: str, pg_user: str, extra_env: dict[str, str]) -> DagsterService:
    """Code server and webserver on the instance in ``base/home`` (callers must stop them)."""
    home, root, logs = base / "home", base / "agents", base / "logs"
    root.mkdir(parents=True)
    logs.mkdir()
    code_port, web_port = free_port(), free_port()
    write_home(home, code_port)
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_PG_HOST": PG_HOST,
        "DAGSTER_PG_PORT": str(PG_PORT),
        "DAGSTER_PG_USER": pg_user,
        "DAGSTER_PG_PASSWORD": "",
        "DAGSTER_PG_DB": db_name,
        "MEMORY_PIPELINE_ROOT": str(root),
        "MEMORY_PIPELINE_LANCEDB_URI": str(base / "lancedb"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
        **extra_env,
    }
    service = DagsterService(home=home, root=root, lance_uri=env["MEMORY_PIPELINE_LANCEDB_URI"], env=env, web_port=web_port)
    workspace = str(home / "workspace.yaml")
    # The code server loads the definitions once; the daemon and the webserver talk to it over
    # gRPC and runs are started by it, as with a user code deployment on Kubernetes.
    service.procs.append(
        start_process(
            "code-server",
            [bin_path("dagster"), "api", "grpc", "-m", "memory_pipeline.definitions", "-h", "127.0.0.1", "-p", str(code_port)],
            env, home, logs,
        )
    )
    try:
        service.wait_for("the code server to load the definitions", lambda: code_server_serving(code_port), CODE_SERVER_TIMEOUT_S)
    except BaseException:
        stop_service(service)
        raise
    service.procs.append(
        start_process(
            "webserver",
            [bin_path("dagster-webserver"), "-h", "127.0.0.1", "-p", str(web_port), "-w", workspace],
            env, home, logs,
        )
    )
    return service


def start_daemon(service: DagsterService) -> None:
    """The daemon comes last: sensors and schedules start launching runs as soon as it is up."""
    workspace = str(service.home / "workspace.yaml")
    logs = service.procs[0].log.parent
    service.procs.append(start_process("daemon", [bin_path("dagster-daemon"), "run", "-w", workspace], service.env, service.home, logs))


def code_server_serving(port: int) -> tuple[bool, str]:
    """The health check ``dagster api grpc-health-check`` makes (docs/deploy.md), asked from this
    process: the command starts a Python process importing dagster for every probe (~1.8 CPU seconds
    each, ~8 s in all while the code server loads on a busy machine)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        try:
            response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="DagsterApi"), timeout=10)
        except grpc.RpcError as exc:
            return False, f"{exc.code().name}: {exc.details()}"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)
    return status == "SERVING", status


def stop_service(service: DagsterService) -> list[str]:
    """Stops the webserver and the daemon first (nothing new is launched), then the code server."""
    outcomes = [stop_process(proc) for proc in reversed(service.procs)]
    leaked = [proc.name for proc in service.procs if group_alive(proc)]
    if leaked:
        outcomes.append(f"process groups still alive: {leaked}")
    return outcomes
