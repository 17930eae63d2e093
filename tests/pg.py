"""A real PostgreSQL server for tests and benchmarks, from Debian's ``postgresql`` package (the Makefile installs it).

:class:`PgServer` runs ``initdb`` into a temp directory and ``pg_ctl`` on a free loopback port, with its unix socket
in that directory and trust authentication for one user; :meth:`PgServer.stop` removes it all. ``initdb`` refuses to
run as root (CI runs as root), so as root the server runs as an unprivileged system user (``postgres``, which the
package creates, else ``nobody``) through ``runuser``; as anyone else it runs as that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

USER = "rollscope"


def _bin(name: str) -> str:
    """``name`` from the newest PostgreSQL under /usr/lib/postgresql (Debian keeps server binaries off PATH)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return found[-1]
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise RuntimeError(f"PostgreSQL's {name} is not installed: apt-get install postgresql (make install does)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    """One throw-away PostgreSQL server on 127.0.0.1.

    Args:
        settings: extra ``-c name=value`` server settings (tests turn fsync off; benchmarks keep the defaults).
    """

    def __init__(self, settings: dict[str, str] | None = None):
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="rollscope-pg-"))
        self.data = self.dir / "data"
        self.settings = settings or {}
        self.run_as: str | None = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    pw = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.run_as = name
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
                break
            else:
                raise RuntimeError("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL")
        self._cmd([_bin("initdb"), "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8",
                   "--locale=C.UTF-8", "--no-sync"])
        self.start()

    def _cmd(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        if self.run_as is not None:
            argv = ["runuser", "-u", self.run_as, "--", *argv]
        res = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        if check and res.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr or res.stdout}\n{tail}")
        return res

    def start(self) -> None:
        """Start (or start again after :meth:`stop_server`) and wait until it accepts connections."""
        opts = " ".join([f"-p {self.port}", f"-k {self.dir}", "-c listen_addresses=127.0.0.1",
                         *(f"-c {k}={v}" for k, v in self.settings.items())])
        self._cmd([_bin("pg_ctl"), "-D", str(self.data), "-o", opts, "-l", str(self.dir / "server.log"), "-w",
                   "-t", "60", "start"])

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server process, keeping its data (``fast``: clients are disconnected at once)."""
        self._cmd([_bin("pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"], check=False)

    def restart(self) -> None:
        self.stop_server()
        self.start()

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{db}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server and delete everything it wrote."""
        self.stop_server("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
