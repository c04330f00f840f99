// kubelet_grpc_floor — the smallest process that does what the agent cannot do without: a grpc++
// server on a unix socket (kubelet's DRA and registration services) and an OpenSSL client context
// (the API server). Its RSS is the floor under the agent's idle RSS with the design card's
// libraries, linked as the agent links them; bench/scenario/gpu_claims.py reports both.
//   kubelet_grpc_floor <socket path>   → prints "ready", then serves until SIGTERM
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <openssl/ssl.h>
#include <signal.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kubelet_grpc_floor <socket path>\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  SSL_CTX* tls = SSL_CTX_new(TLS_client_method());
  grpc::CallbackGenericService idle;  // a registered service, as the agent has, that nobody calls
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("unix:") + argv[1], grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(&idle);
  auto server = builder.BuildAndStart();
  if (!server || !tls) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  server->Shutdown();
  SSL_CTX_free(tls);
  return 0;
}
