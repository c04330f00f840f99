#include "k8s/server_url.hpp"

#include <openssl/evp.h>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
// Debian ships Boost.URL (1.81) without its compiled library: this one file builds it in.
#include <boost/url/src.hpp>

#include <cctype>
#include <charconv>

namespace nvdra::k8s {

namespace urls = boost::urls;

Result<ServerUrl> parse_server_url(std::string_view url) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::kInvalidArgument, "server \"" + std::string(url) + "\" " + why);
  };
  auto parsed = urls::parse_uri(url);
  if (!parsed) return bad("is not a valid URL (" + parsed.error().message() + ")");
  const urls::url_view& u = *parsed;
  if (u.scheme_id() != urls::scheme::https) return bad("must be an https:// URL (plain http is not supported)");
  if (u.has_userinfo()) return bad("must not carry user info; put credentials in the kubeconfig's user");
  if (u.has_query() || u.has_fragment()) return bad("must not have a query or fragment");
  ServerUrl out;
  switch (u.host_type()) {
    case urls::host_type::ipv4:
    case urls::host_type::name: out.host = std::string(u.host_address()); break;
    case urls::host_type::ipv6: out.host = std::string(u.host_address()); break;
    default: return bad("has no usable host");
  }
  if (out.host.empty()) return bad("has no host");
  if (u.has_port()) {
    const auto p = u.port();
    unsigned value = 0;
    const auto res = std::from_chars(p.data(), p.data() + p.size(), value);
    if (p.empty() || res.ec != std::errc() || res.ptr != p.data() + p.size() || value == 0 || value > 65535)
      return bad("has an invalid port \"" + std::string(p) + "\" (1-65535)");
    out.port = std::string(p);
  }
  std::string path(u.encoded_path());
  while (!path.empty() && path.back() == '/') path.pop_back();
  out.path_prefix = std::move(path);
  return out;
}

Result<std::string> decode_base64_strict(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  for (char c : text)
    if (c != '\n' && c != '\r') clean.push_back(c);
  auto bad = [](std::string why) { return make_error(ErrorCode::kInvalidArgument, "is not valid base64: " + why); };
  if (clean.size() % 4 != 0) return bad("length " + std::to_string(clean.size()) + " is not a multiple of 4");
  // EVP_DecodeBlock skips leading/trailing blanks and treats '=' loosely: check the layout first.
  std::size_t pad = 0;
  while (pad < 2 && pad < clean.size() && clean[clean.size() - 1 - pad] == '=') ++pad;
  for (std::size_t i = 0; i < clean.size() - pad; ++i) {
    const unsigned char c = static_cast<unsigned char>(clean[i]);
    if (!(std::isalnum(c) || c == '+' || c == '/'))
      return bad("character " + std::to_string(i) + " is not in the standard alphabet");
  }
  std::string out(clean.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) return bad("OpenSSL refused it");
  out.resize(static_cast<std::size_t>(n) - pad);  // EVP_DecodeBlock counts padding as zero bytes
  return out;
}

}  // namespace nvdra::k8s
