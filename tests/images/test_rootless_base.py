"""A Debian base image made by a user without root: mmdebstrap in its unshare mode (the user's subordinate ids,
no root at all), imported into the user's own podman storage. A real account (useradd), as CI runs as root."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.accounts import unprivileged_account

pytestmark = pytest.mark.skipif(shutil.which("mmdebstrap") is None or shutil.which("podman") is None,
                                reason="needs mmdebstrap and podman (scripts/setup-host.sh installs them)")


def test_a_user_without_root_makes_the_debian_base_and_runs_it():
    with unprivileged_account() as user:
        made = user.mpistack("base", "debian:bookworm")
        assert "localhost/debian:bookworm made from" in made.stdout + made.stderr, made.stdout + made.stderr
        labels = json.loads(user.run(["podman", "image", "inspect", "--format", "{{json .Labels}}",
                                      "localhost/debian:bookworm"]).stdout)
        assert labels["org.mpistack.base.maker"] == "mmdebstrap"
        ran = user.run(["podman", "run", "--rm", "--network", "host", "localhost/debian:bookworm",
                        "sh", "-c", "cat /etc/debian_version; id -u; ls /var/lib/apt/lists | grep -c _Packages"],
                       check=False)
        version, uid, package_lists = ran.stdout.split()
        assert version.startswith("12.") and uid == "0"  # root in the user's namespace, the user outside
        assert package_lists == "0"  # apt's lists were cleaned: a small image
        again = user.mpistack("base", "debian:bookworm")  # made once: per user, cached in their storage
        assert "exists" in again.stdout + again.stderr


def test_without_subordinate_ids_the_base_is_refused_with_the_administrators_command():
    with unprivileged_account() as user:
        subprocess.run(["usermod", "--del-subuids", "0-4294967294", "--del-subgids", "0-4294967294", user.name],
                       check=True)
        refused = user.mpistack("base", "debian:bookworm", check=False, timeout=300)
        assert refused.returncode != 0
        said = refused.stdout + refused.stderr
        assert f"no subordinate ids for {user.name} in /etc/subuid and /etc/subgid" in said, said
        assert "sudo scripts/setup-host.sh" in said and "Traceback" not in said
