"""Builds the .deb with dpkg-buildpackage as a Debian maintainer would, and checks it: its contents and
conffile, lintian (no errors, no warnings), and an install with dpkg into a throw-away Debian root
(minbase from the machine's mirror plus the package's own Depends) in which the agent and nvdractl run
and the installed unit passes `systemd-analyze verify`.

The package is built under a fixed path (NVDRA_DEB_BUILD_DIR, default /var/tmp/nvdra-deb-build), so
that ccache hits on the compiler lines dpkg-buildpackage gives (its -ffile-prefix-map names the build
directory) and a second run (CI on the same machine) compiles nothing. Needs root (dpkg in a chroot),
dpkg-buildpackage, lintian and debootstrap: a missing one skips here and fails in CI."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from packaging_test import DEBIAN, SRC, read, verify_unit
from prerequisites import requires

BUILD_ROOT = os.environ.get("NVDRA_DEB_BUILD_DIR", "/var/tmp/nvdra-deb-build")
ARCH = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()


def missing_tools():
    missing = [] if os.geteuid() == 0 else ["root (dpkg and debootstrap in a throw-away root)"]
    return missing + [t for t in ("dpkg-buildpackage", "lintian", "debootstrap", "fakeroot") if not shutil.which(t)]


def copy_source(tree):
    """The checkout's files as a source tree with debian/ at its top, as a source package has it."""
    files = subprocess.run(["git", "-C", SRC, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        if rel.startswith("packaging/debian/") or not os.path.isfile(os.path.join(SRC, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
        shutil.copy2(os.path.join(SRC, rel), os.path.join(tree, rel))
    shutil.copytree(DEBIAN, os.path.join(tree, "debian"))


def installed_providers():
    """{virtual package: the installed package that provides it} (libspdlog1.10-fmt9 -> libspdlog1.10):
    debootstrap's --include takes real packages only."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Provides}\n"], capture_output=True, text=True,
                         check=True).stdout
    providers = {}
    for line in out.splitlines():
        package, _, provides = line.partition("\t")
        for name in filter(None, (re.split(r"[\s(:]", p.strip())[0] for p in provides.split(","))):
            providers.setdefault(name, package)
    return providers


def depends_packages(deb):
    """The real package names of the .deb's Depends (first of each alternative, versions dropped)."""
    depends = subprocess.run(["dpkg-deb", "-f", deb, "Depends"], capture_output=True, text=True, check=True).stdout
    names = {re.split(r"[\s(:]", alt.split("|")[0].strip())[0] for alt in depends.split(",") if alt.strip()}
    providers = installed_providers()
    real = {n for n in names if subprocess.run(["dpkg-query", "-W", "-f=${Status}", n], capture_output=True,
                                               text=True).stdout.endswith(" installed")}
    return sorted(real | {providers.get(n, n) for n in names - real})


@requires(lambda: not missing_tools(), lambda: ", ".join(missing_tools()), "see contrib/dev/packages.txt")
class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(BUILD_ROOT, ignore_errors=True)
        tree = os.path.join(BUILD_ROOT, "nvdra-0.1.0")
        copy_source(tree)
        env = dict(os.environ, DEB_BUILD_OPTIONS=f"parallel={os.cpu_count() or 1}", CCACHE_BASEDIR=tree)
        res = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, capture_output=True, text=True,
                             timeout=3000, env=env)
        if res.returncode != 0:
            raise AssertionError("dpkg-buildpackage failed:\n" + res.stdout[-4000:] + res.stderr[-4000:])
        cls.deb = os.path.join(BUILD_ROOT, f"nvdra-agent_0.1.0-1_{ARCH}.deb")
        cls.changes = os.path.join(BUILD_ROOT, f"nvdra_0.1.0-1_{ARCH}.changes")
        cls.root = tempfile.TemporaryDirectory(prefix="nvdra-deb-root-")
        cls.addClassCleanup(cls.root.cleanup)
        rootfs = os.path.join(cls.root.name, "rootfs")
        made = subprocess.run([os.path.join(SRC, "contrib", "image", "minbase-rootfs.sh"), rootfs,
                               ",".join(depends_packages(cls.deb))], capture_output=True, text=True, timeout=1800)
        if made.returncode != 0:
            raise AssertionError("minbase-rootfs.sh failed:\n" + made.stdout[-3000:] + made.stderr[-3000:])
        shutil.copy(cls.deb, os.path.join(rootfs, "tmp", "nvdra-agent.deb"))
        cls.install = subprocess.run(["chroot", rootfs, "dpkg", "-i", "/tmp/nvdra-agent.deb"], capture_output=True,
                                     text=True, timeout=600)
        cls.rootfs = rootfs

    def chroot(self, *argv):
        return subprocess.run(["chroot", self.rootfs, *argv], capture_output=True, text=True, timeout=60)

    def test_package_holds_binaries_unit_conffile_policy_and_man_pages(self):
        listing = subprocess.run(["dpkg-deb", "-c", self.deb], capture_output=True, text=True, check=True).stdout
        for path in ("./usr/sbin/nvdra-agent", "./usr/bin/nvdractl", "./lib/systemd/system/nvdra-agent.service",
                     "./etc/nvdra/agent.yaml", "./usr/share/dbus-1/system.d/io.nvdra.Agent1.conf",
                     "./usr/share/man/man8/nvdra-agent.8.gz", "./usr/share/man/man1/nvdractl.1.gz",
                     "./usr/lib/sysusers.d/nvdra-agent.conf", "./usr/share/doc/nvdra-agent/copyright"):
            self.assertIn(path, listing)
        package = subprocess.run(["dpkg-deb", "-f", self.deb, "Package"], capture_output=True, text=True)
        self.assertEqual(package.stdout.strip(), "nvdra-agent")
        with tempfile.TemporaryDirectory() as ctrl:
            subprocess.run(["dpkg-deb", "-e", self.deb, ctrl], check=True)
            self.assertIn("/etc/nvdra/agent.yaml", read(ctrl, "conffiles"))

    def test_lintian_reports_no_errors_or_warnings(self):
        res = subprocess.run(["lintian", "--fail-on", "error,warning", self.changes], capture_output=True, text=True,
                             timeout=600)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)

    def test_dpkg_installs_it_into_a_debian_root_where_both_binaries_run(self):
        self.assertEqual(self.install.returncode, 0, self.install.stdout + self.install.stderr)
        status = self.chroot("dpkg-query", "-W", "-f=${Status}", "nvdra-agent")
        self.assertEqual(status.stdout, "install ok installed")
        agent = self.chroot("/usr/sbin/nvdra-agent", "--version")
        self.assertEqual(agent.returncode, 0, agent.stderr)
        self.assertTrue(agent.stdout.startswith("nvdra-agent "), agent.stdout)
        ctl = self.chroot("/usr/bin/nvdractl", "--version")
        self.assertEqual(ctl.returncode, 0, ctl.stderr)

    def test_installed_unit_verifies(self):
        self.assertEqual(self.install.returncode, 0, self.install.stderr)
        self.assertEqual(verify_unit(self.rootfs), (0, ""))


if __name__ == "__main__":
    unittest.main()
