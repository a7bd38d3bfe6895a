"""Debian packages for the test harnesses: whether they can be had here, and installing them."""

from __future__ import annotations

import os
import shutil
import subprocess


def unavailable_reason(what: str, installed: bool) -> str | None:
    """Why `what` cannot be started here (None when it can): root is needed to start the
    daemons as their own users, and to install them with apt-get when they are missing."""
    if installed:
        return None if os.geteuid() == 0 else f"starting {what} needs root"
    if os.geteuid() != 0:
        return f"{what} is not installed and installing it needs root"
    if not shutil.which("apt-get"):
        return f"{what} is not installed and there is no apt-get to install it"
    return None


def apt_install(packages: list[str]) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
                   check=True, env=env, capture_output=True)
