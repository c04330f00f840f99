#pragma once
// A kubeconfig's cluster.server URL and its *-data fields, parsed strictly with the libraries
// already linked (Boost.URL, OpenSSL's base64) rather than by hand:
//  * https only; host (name, IPv4, [IPv6]); optional numeric port; an optional path prefix, as a
//    proxy in front of the API server needs ("https://rancher/k8s/clusters/c-abc": every request
//    goes to "<prefix>/api/…", as client-go's rest.Config.Host with a path does it);
//  * no user info, query or fragment (client-go ignores them silently; we refuse them instead).
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::k8s {

struct ServerUrl {
  std::string host;         // without brackets for IPv6
  std::string port = "443";
  std::string path_prefix;  // "" or "/k8s/clusters/c-abc" (percent-encoded as given, no trailing '/')
};

// Error messages say what is wrong with `url`; the caller adds the file and field.
Result<ServerUrl> parse_server_url(std::string_view url);

// Standard base64 as Go's encoding/base64.StdEncoding (what kubeconfig's *-data fields are):
// padding required, line breaks ignored, anything else outside the alphabet refused.
Result<std::string> decode_base64_strict(std::string_view text);

}  // namespace nvdra::k8s
