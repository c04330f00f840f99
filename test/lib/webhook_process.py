"""nvdra-webhook as a process for the tests and the bench: throwaway certificates (the API double's
openssl helpers), the binary started on free ports, its ports read from its start-up line."""
import os
import queue
import re
import shutil
import subprocess
import threading

from apiserver_double.certs import make_certs
from nvdra_testlib import BINARY_DIR, clean_env

WEBHOOK = os.path.join(BINARY_DIR, "agent", "admission", "nvdra-webhook")
PATH = "/validate-resource-claim-parameters"


class WebhookProcess:
    """Starts nvdra-webhook serving <dir>/tls.crt and tls.key (copies of a server certificate for
    127.0.0.1 signed by <dir>/ca.crt), with metrics on another free port."""

    def __init__(self, directory, gates="", timeout=30):
        if not os.path.exists(WEBHOOK):
            raise AssertionError(f"{WEBHOOK} is not built (cmake --build build --target nvdra-webhook)")
        if not shutil.which("openssl"):
            raise AssertionError("the openssl CLI is required to make the test certificates")
        self.dir = directory
        self.ca, cert, key = make_certs(directory)
        self.first_cert = cert
        self.cert, self.key = os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key")
        shutil.copy(cert, self.cert)
        shutil.copy(key, self.key)
        self.proc = subprocess.Popen(
            [WEBHOOK, "--tls-cert-file", self.cert, "--tls-private-key-file", self.key, "--port", "0",
             "--http-endpoint", "127.0.0.1:0", "--feature-gates", gates],
            env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        lines = queue.Queue()
        threading.Thread(target=self._drain, args=(lines,), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                self.kill()
                raise AssertionError(f"nvdra-webhook did not say it listens within {timeout} s:\n" + self.log())
            if line is None:
                raise AssertionError("nvdra-webhook exited at start:\n" + self.log())
            m = re.search(r"listening on port (\d+) .* metrics on port (\d+)", line)
            if m:
                self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
                return

    def _drain(self, lines):
        for line in self.proc.stderr:
            self.stderr.append(line)
            lines.put(line)
        lines.put(None)

    def log(self):
        return "".join(self.stderr)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
