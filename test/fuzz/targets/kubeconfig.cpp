// A kubeconfig file (k8s/client_config), read through a memfd so that no file is written per run.
// Invariant: an accepted config names a server host and port.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "k8s/client_config.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(kubeconfig) {
  const int fd = memfd_create("kubeconfig", MFD_CLOEXEC);
  NVDRA_FUZZ_CHECK(fd >= 0);
  if (fd < 0) return nvdra::fuzz::Verdict::kRejected;
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  auto config = nvdra::k8s::load_kubeconfig("/proc/self/fd/" + std::to_string(fd));
  close(fd);
  if (!config.ok()) return nvdra::fuzz::Verdict::kRejected;
  NVDRA_FUZZ_CHECK(!config->host.empty());
  NVDRA_FUZZ_CHECK(!config->port.empty());
  return nvdra::fuzz::Verdict::kAccepted;
}
