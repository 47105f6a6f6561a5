"""A one-node SLURM cluster for the tests: munge, slurmctld and slurmd in a temporary folder.

``SlurmCluster.start(folder)`` finds the binaries (installing Debian's ``slurm-wlm`` and
``munge`` with ``apt-get`` where it runs as root and they are missing), writes a munge key and a
``slurm.conf`` naming this host's short hostname, starts the three daemons on free ports, waits
until the node is idle and returns the cluster; ``stop()`` ends the daemons by their process ids.
Commands reach this cluster through ``env`` (``SLURM_CONF``). Not a test module.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
COMMANDS = ("sbatch", "srun", "sinfo", "squeue", "scancel")
PACKAGES = ("slurm-wlm", "munge")


class SlurmUnavailableError(RuntimeError):
    """SLURM cannot be run here (no binaries and no way to install them); the reason says why."""


@dataclass
class SlurmCluster:
    """A running one-node cluster: its folder, its environment and the daemons' pid files."""

    folder: Path
    env: dict[str, str]
    pid_files: list[Path] = field(default_factory=list)

    @classmethod
    def start(cls, folder: Path, *, memory_mib: int = 8000) -> SlurmCluster:
        """Start munged, slurmctld and slurmd under ``folder``; wait until the node is idle."""
        binaries = find_binaries()
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("state", "spool", "log", "munge"):
            (folder / name).mkdir(exist_ok=True)
        (folder / "munge").chmod(0o700)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        socket_path = folder / "munge" / "munge.socket"
        conf = folder / "slurm.conf"
        conf.write_text(configuration(folder, socket_path=socket_path, memory_mib=memory_mib))
        cluster = cls(folder=folder, env=os.environ | {"SLURM_CONF": str(conf)})
        munge = folder / "munge"
        cluster._run(
            binaries["munged"],
            f"--key-file={key}",
            f"--socket={socket_path}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
            "--force",
        )
        cluster.pid_files.append(munge / "munged.pid")
        cluster._wait_for(socket_path.exists, what="munged's socket")
        for daemon in ("slurmctld", "slurmd"):
            cluster._run(binaries[daemon], "-f", str(conf))
            cluster.pid_files.append(folder / f"{daemon}.pid")
        cluster._wait_for(cluster.idle, what="the node to become idle (sinfo)")
        return cluster

    def idle(self) -> bool:
        """Return whether the one node reports idle."""
        states = self.run("sinfo", "-h", "-o", "%T", check=False).stdout.split()
        return states == ["idle"]

    def run(
        self, *command: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        """Run a SLURM command against this cluster; return its completed process."""
        return subprocess.run(
            list(command),
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def stop(self) -> None:
        """End the daemons (slurmd, slurmctld, munged) by their process ids, all at once.

        Each takes about 2 s to end after SIGTERM; one after the other they held up the end of
        every test session that started a cluster by 6 s. What is still alive after 10 s is
        killed.
        """
        pids = []
        for pid_file in reversed(self.pid_files):
            try:
                pid = int(pid_file.read_text().split()[0])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError, IndexError):
                continue
            pids.append(pid)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
            time.sleep(0.05)
        for pid in pids:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                    os.kill(pid, signal.SIGKILL)

    def log_tail(self, lines: int = 30) -> str:
        """Return the end of the daemons' logs (for a failing test's message)."""
        texts = []
        for log in sorted((self.folder / "log").glob("*.log")):
            texts.append(f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-lines:]))
        return "\n".join(texts)

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            list(command), env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            msg = f"{Path(command[0]).name} did not start ({done.returncode}): {done.stderr}"
            raise SlurmUnavailableError(msg + self.log_tail())

    def _wait_for(self, ready, *, what: str, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.2)
        self.stop()
        msg = f"Timed out after {seconds:.0f} s waiting for {what}.\n{self.log_tail()}"
        raise SlurmUnavailableError(msg)


def configuration(folder: Path, *, socket_path: Path, memory_mib: int) -> str:
    """Return a ``slurm.conf`` for one node (this host) with its state and logs in ``folder``."""
    host = socket.gethostname().split(".")[0]
    controller, daemon = free_port(), free_port()
    return "\n".join(
        [
            "ClusterName=projecttest",
            f"SlurmctldHost={host}",
            "SlurmUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={socket_path}",
            "CredType=cred/munge",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "MpiDefault=none",
            "ReturnToService=2",
            f"SlurmctldPort={controller}",
            f"SlurmdPort={daemon}",
            f"StateSaveLocation={folder / 'state'}",
            f"SlurmdSpoolDir={folder / 'spool'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'log' / 'slurmd.log'}",
            f"NodeName={host} CPUs={os.cpu_count()} RealMemory={memory_mib} State=UNKNOWN",
            "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def find_binaries() -> dict[str, str]:
    """Return the paths of the daemons; install the packages first where possible and needed."""
    found = {name: _which(name) for name in (*DAEMONS, *COMMANDS)}
    if None in found.values():
        _install()
        found = {name: _which(name) for name in (*DAEMONS, *COMMANDS)}
    missing = sorted(name for name, path in found.items() if path is None)
    if missing:
        msg = f"SLURM binaries {missing} are missing and could not be installed."
        raise SlurmUnavailableError(msg)
    return {name: str(path) for name, path in found.items()}


def free_port() -> int:
    """Return a TCP port that is free now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _which(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for d in ("/usr/sbin", "/sbin") if (p := Path(d) / name).exists()), None
    )


def _install() -> None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        msg = (
            "SLURM and munge are not installed, and this process cannot install them "
            "(it needs root and apt-get): `apt-get install slurm-wlm munge`."
        )
        raise SlurmUnavailableError(msg)
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
    ):
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=600, check=False
        )
        if done.returncode != 0:
            msg = f"`{' '.join(command)}` failed ({done.returncode}): {done.stderr[-2000:]}"
            raise SlurmUnavailableError(msg)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
