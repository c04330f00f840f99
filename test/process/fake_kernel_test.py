"""The simulated kernel of the VFIO tests (test/lib/fake_pci.py) keeps a writer's order across its files, as Linux
does: a driver_override written before a drivers_probe is in force at that probe. The agent gives a GPU back to
nvidia that way (override cleared, then probe); a simulator that applied the probe first bound it to vfio-pci
again and failed a correct agent."""
import os
import shutil
import tempfile
import unittest

from fake_pci import FakePciHost


def write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


class FakeKernelOrder(unittest.TestCase):
    def setUp(self):
        root = tempfile.mkdtemp(prefix="nvdra-fake-pci-")
        self.addCleanup(shutil.rmtree, root, True)
        self.pci = FakePciHost(root, "passthrough")
        self.addCleanup(self.pci.stop)
        self.pci_bus = os.path.join(self.pci.sys, "bus", "pci")

    def test_an_override_written_before_a_probe_holds_at_that_probe_when_both_land_after_the_select(self):
        a, b = self.pci.gpu_address(0), self.pci.gpu_address(1)
        for bdf in (a, b):
            self.pci.set_driver(bdf, "")
        self.pci.override[a] = "vfio-pci"  # left by the hand-over to vfio-pci

        def give_a_back():  # the agent's give-back of GPU a, landing while the kernel is between select and read
            self.pci.after_select = None
            write(os.path.join(self.pci_bus, "devices", a, "driver_override"), "")  # as the agent writes them
            write(os.path.join(self.pci_bus, "drivers_probe"), a)

        self.pci.after_select = give_a_back
        self.pci.start()
        # Wakes the kernel: only drivers_probe is ready at its select.
        write(os.path.join(self.pci_bus, "drivers_probe"), b)
        self.pci.wait_for_driver(b, "nvidia")
        self.pci.wait_for_driver(a, "nvidia")
        self.assertEqual([w for w in self.pci.writes if a in w], [("override", a, ""), ("probe", None, a)])


if __name__ == "__main__":
    unittest.main()
