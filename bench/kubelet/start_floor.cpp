// kubelet_start_floor — the least a start of a node's DRA plugins must do, as a process of its own
// (issue #33 item 5): serve each driver's registration and DRA sockets (grpc++, one server per driver,
// answering only kubelet's Registration service), let kubelet register them, and meanwhile create the
// drivers' ResourceSlices on the API server over one TLS connection per driver (Beast and OpenSSL, the
// server's CA trusted, its address verified, as the agent does). bench/scenario/start_floor.py execs it
// in the same run as nvdra's start and its Python floor: unlike that floor, whose process is already
// running with a TLS context built, this one pays what every start pays before its first request
// (exec, the dynamic loader, OpenSSL's initialisation and first context, gRPC's), and nothing more:
// no Node, version or slice reads, no NVML, no checkpoint, no CDI.
//
// kubelet_start_floor_reads, built from this file too, with --reads-node NODE also makes the two reads no
// correct start can skip, one on each connection before the creates, as the agent makes them: the Node,
// whose UID every slice's ownerReference names (set into each body, not taken from the harness), and the
// node's slices (what a start must update rather than create). Still no version or OpenAPI reads: those
// are nvdra's own. The plain floor refuses --reads-node.
//
//   kubelet_start_floor[_reads] --registrar DIR --plugins DIR --server https://HOST:PORT --ca FILE
//                       --token FILE [--reads-node NODE] --driver NAME=BODIES [--driver NAME=BODIES ...]
//
// BODIES: one ResourceSlice per line, JSON as POSTed. Prints "done <its CPU so far, µs>" once every
// driver is registered and every slice created (201), then shuts down; any failure: exit 1, the
// reason on stderr.
#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
// Debian ships Boost.URL without its compiled library (as in k8s/server_url.cpp). Not that file's
// parse_server_url: nvdra_k8s would bring yaml-cpp and fmt into the floor's exec.
#include <boost/url/src.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <future>
#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agent/kubelet/proto/registration.grpc.pb.h"
#include "bench/kubelet/start_floor_reads.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

struct Driver {
  std::string name, bodies_file;
};

struct Args {
  std::string registrar, plugins, server, ca_file, token_file;
  std::string reads_node;  // "": no reads
  std::vector<Driver> drivers;
};

// From any thread: _Exit, so no static destructor runs under gRPC's threads.
[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "kubelet_start_floor: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) die("cannot read " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--registrar") a.registrar = value;
    else if (flag == "--plugins") a.plugins = value;
    else if (flag == "--server") a.server = value;
    else if (flag == "--ca") a.ca_file = value;
    else if (flag == "--token") a.token_file = value;
    else if (flag == "--reads-node" && start_floor::kReads) a.reads_node = value;
    else if (flag == "--reads-node") die("--reads-node: this build makes no reads, kubelet_start_floor_reads does");
    else if (flag == "--driver" && value.find('=') != std::string::npos)
      a.drivers.push_back({value.substr(0, value.find('=')), value.substr(value.find('=') + 1)});
    else die("unknown flag or value: " + flag + " " + value);
  }
  if (a.registrar.empty() || a.plugins.empty() || a.server.empty() || a.ca_file.empty() || a.token_file.empty() ||
      a.drivers.empty())
    die("usage: --registrar DIR --plugins DIR --server URL --ca FILE --token FILE --driver NAME=BODIES...");
  return a;
}

// Kubelet's side of registration (GetInfo, then NotifyRegistrationStatus); a registered driver counts
// the latch down once.
class Registration final : public pluginregistration::Registration::CallbackService {
 public:
  Registration(std::string driver, std::string endpoint, std::latch& done)
      : driver_(std::move(driver)), endpoint_(std::move(endpoint)), done_(done) {}

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context, const pluginregistration::InfoRequest*,
                                    pluginregistration::PluginInfo* reply) override {
    reply->set_type("DRAPlugin");
    reply->set_name(driver_);
    reply->set_endpoint(endpoint_);
    reply->add_supported_versions("v1.DRAPlugin");
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* NotifyRegistrationStatus(grpc::CallbackServerContext* context,
                                                     const pluginregistration::RegistrationStatus* status,
                                                     pluginregistration::RegistrationStatusResponse*) override {
    if (!status->plugin_registered()) die("kubelet rejected " + driver_ + ": " + status->error());
    if (!registered_.exchange(true)) done_.count_down();  // a registration again (kubelet restarted) counts once
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  std::string driver_, endpoint_;
  std::latch& done_;
  std::atomic<bool> registered_{false};
};

struct Served {
  std::unique_ptr<Registration> service;
  std::unique_ptr<grpc::Server> server;
};

// One server per driver on both of its sockets: the DRA socket is where kubelet would call next.
Served serve(const Args& a, const Driver& d, std::latch& done) {
  const std::string endpoint = a.plugins + "/" + d.name + ".sock";
  Served s{std::make_unique<Registration>(d.name, endpoint, done), nullptr};
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + endpoint, grpc::InsecureServerCredentials());
  builder.AddListeningPort("unix:" + a.registrar + "/" + d.name + "-reg.sock", grpc::InsecureServerCredentials());
  builder.RegisterService(s.service.get());
  s.server = builder.BuildAndStart();
  if (!s.server) die("cannot serve " + endpoint);
  return s;
}

struct Server {
  std::string host, port;
};

Server server_of(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed || parsed->scheme() != "https" || !parsed->has_port()) die("--server: want https://HOST:PORT, got " + url);
  return {std::string(parsed->host_address()), std::string(parsed->port())};
}

// One keep-alive TLS connection to the API server, requests one after another.
class Connection {
 public:
  Connection(ssl::context& tls, const Server& server, const std::string& token)
      : stream_(io_, tls), server_(server), token_(token) {
    stream_.set_verify_callback(ssl::host_name_verification(server.host));
    boost::system::error_code not_ip;
    (void)asio::ip::make_address(server.host, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(stream_.native_handle(), server.host.c_str());
    // An address is not looked up (as the agent does not); a name is.
    const auto lookup = not_ip ? tcp::resolver::flags() : tcp::resolver::numeric_host | tcp::resolver::numeric_service;
    tcp::resolver resolver(io_);
    beast::get_lowest_layer(stream_).connect(resolver.resolve(server.host, server.port, lookup));
    beast::get_lowest_layer(stream_).socket().set_option(tcp::no_delay(true));
    stream_.handshake(ssl::stream_base::client);
  }

  // The answer's body; any status but `want` throws with the answer.
  std::string request(http::verb verb, const std::string& target, http::status want, std::string body = {}) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, server_.host + ":" + server_.port);
    req.set(http::field::authorization, "Bearer " + token_);
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buffer_, res);
    if (res.result() != want)
      throw std::runtime_error(std::string(req.method_string()) + " " + target + " answered " +
                               std::to_string(res.result_int()) + ": " + res.body());
    return std::move(res.body());
  }

 private:
  asio::io_context io_;
  beast::ssl_stream<beast::tcp_stream> stream_;
  const Server& server_;
  const std::string& token_;
  beast::flat_buffer buffer_;
};

// Creates `bodies` one after another on one connection; every answer must be 201. With reads, the
// first writer reads the Node and hands its UID to all, the last lists the node's slices (one
// writer does both).
void create_all(ssl::context& tls, const Server& server, const std::string& token, const std::string& reads_node,
                const std::vector<std::string>& bodies, std::promise<std::string>* read_uid,
                std::shared_future<std::string> uid, bool list) {
  Connection conn(tls, server, token);
  if (read_uid) {
    read_uid->set_value(
        start_floor::node_uid(conn.request(http::verb::get, "/api/v1/nodes/" + reads_node, http::status::ok)));
  }
  if (list)
    (void)conn.request(http::verb::get, "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D" + reads_node,
                       http::status::ok);
  for (const auto& body : bodies)
    (void)conn.request(http::verb::post, "/apis/resource.k8s.io/v1/resourceslices", http::status::created,
                       reads_node.empty() ? body : start_floor::owned_by(body, uid.get()));
}

}  // namespace

int main(int argc, char** argv) {
  // As the agent's main(): Debian's abseil keeps its debug lock-order graph unless told not to.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const Args a = parse(argc, argv);
  const Server server = server_of(a.server);
  std::string token = read_file(a.token_file);
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  std::vector<std::vector<std::string>> bodies;
  for (const auto& d : a.drivers) bodies.push_back(read_lines(d.bodies_file));

  // Every driver registered and every driver's slices created.
  std::latch done(static_cast<std::ptrdiff_t>(2 * a.drivers.size()));
  ssl::context tls(ssl::context::tls_client);
  tls.set_verify_mode(ssl::verify_peer);
  const std::string ca = read_file(a.ca_file);
  tls.add_certificate_authority(asio::buffer(ca));
  std::promise<std::string> read_uid;
  const std::shared_future<std::string> uid = read_uid.get_future().share();
  const bool reads = !a.reads_node.empty();
  std::vector<std::thread> writers;
  for (std::size_t i = 0; i < bodies.size(); ++i)
    writers.emplace_back([&, i] {
      try {
        create_all(tls, server, token, a.reads_node, bodies[i], reads && i == 0 ? &read_uid : nullptr, uid,
                   reads && i + 1 == bodies.size());
      } catch (const std::exception& e) {
        die(std::string("creating slices: ") + e.what());
      }
      done.count_down();
    });
  std::vector<Served> served;
  for (const auto& d : a.drivers) served.push_back(serve(a, d, done));
  done.wait();
  // Its CPU so far (every thread's, the writers' that ended too), for the harness's CPU split.
  rusage used{};
  getrusage(RUSAGE_SELF, &used);
  const auto us = [](const timeval& t) { return static_cast<long long>(t.tv_sec) * 1000000 + t.tv_usec; };
  std::printf("done %lld\n", us(used.ru_utime) + us(used.ru_stime));
  std::fflush(stdout);
  for (auto& w : writers) w.join();
  for (auto& s : served) s.server->Shutdown();
  return 0;
}
