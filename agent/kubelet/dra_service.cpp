#include "agent/kubelet/dra_service.hpp"

#include <chrono>
#include <exception>
#include <string_view>
#include <unordered_map>

#include "agent/base/log.hpp"
#include "agent/kubelet/concurrently.hpp"
#include "agent/kubelet/failures.hpp"

namespace asio = boost::asio;

namespace nvdra::kubelet {

namespace {

long long ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

// The claim's error string as kubelet shows it in the pod event: always names the claim.
std::string claim_error(const ClaimRef& claim, Error error) {
  if (error.claim.empty()) error.claim = claim.describe();
  return error.describe();
}

}  // namespace

DraService::DraService(asio::any_io_executor ex, ClaimHandler& handler, std::string driver_name)
    : ex_(ex), handler_(handler), driver_(std::move(driver_name)), locks_(ex), log_(nvdra::logger("kubelet")) {}

std::optional<std::string> DraService::validate(const std::vector<ClaimRef>& claims) {
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const auto& c = claims[i];
    const char* missing = c.uid.empty() ? "uid" : c.namespace_name.empty() ? "namespace" : c.name.empty() ? "name" : nullptr;
    if (missing)
      return "claims[" + std::to_string(i) + "]." + missing + " is empty; every claim needs namespace, name and uid";
  }
  // One UID names one claim: the response is a map by UID, so two different claims under one UID
  // would have one answer for both. The same claim listed twice is harmless (prepared once).
  std::unordered_map<std::string_view, std::size_t> first;
  first.reserve(claims.size());
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const auto& c = claims[i];
    auto [it, fresh] = first.emplace(c.uid, i);
    if (fresh) continue;
    const auto& earlier = claims[it->second];
    if (earlier.namespace_name != c.namespace_name || earlier.name != c.name)
      return "claims[" + std::to_string(i) + "].uid " + c.uid + " is also claims[" + std::to_string(it->second) +
             "].uid (" + earlier.namespace_name + "/" + earlier.name + "), but names " + c.namespace_name + "/" +
             c.name + "; a UID identifies one claim";
  }
  return std::nullopt;
}

asio::awaitable<PrepareResults> DraService::prepare(std::vector<ClaimRef> claims) {
  std::vector<std::shared_ptr<PrepareOutcome>> outcomes;
  std::vector<asio::awaitable<void>> bodies;
  for (const auto& claim : claims) {
    outcomes.push_back(std::make_shared<PrepareOutcome>());
    bodies.push_back(prepare_one(claim, outcomes.back()));
  }
  co_await run_concurrently(ex_, std::move(bodies));
  PrepareResults results;
  for (std::size_t i = 0; i < claims.size(); ++i) results[claims[i].uid] = std::move(*outcomes[i]);
  co_return results;
}

asio::awaitable<UnprepareResults> DraService::unprepare(std::vector<ClaimRef> claims) {
  std::vector<std::shared_ptr<std::string>> errors;
  std::vector<asio::awaitable<void>> bodies;
  for (const auto& claim : claims) {
    errors.push_back(std::make_shared<std::string>());
    bodies.push_back(unprepare_one(claim, errors.back()));
  }
  co_await run_concurrently(ex_, std::move(bodies));
  UnprepareResults results;
  for (std::size_t i = 0; i < claims.size(); ++i) results[claims[i].uid] = std::move(*errors[i]);
  co_return results;
}

asio::awaitable<void> DraService::prepare_one(ClaimRef claim, std::shared_ptr<PrepareOutcome> out) {
  const auto start = std::chrono::steady_clock::now();
  auto guard = co_await locks_.acquire(claim.uid);
  // No locals inside the try block: g++ 12 destroys a local declared in a try block that spans a
  // co_await twice.
  std::optional<Result<std::vector<PreparedDevice>>> result;
  std::exception_ptr failure;
  try {
    result.emplace(co_await handler_.prepare(claim));
  } catch (...) {
    failure = std::current_exception();
  }
  if (result && result->ok()) out->devices = std::move(*result).value();
  else if (result) out->error = claim_error(claim, std::move(*result).error());
  if (failure) {
    // Cancellation ends the whole call (kubelet gave up or the agent stops): let it propagate.
    if (is_cancellation(failure)) std::rethrow_exception(failure);
    const auto text = describe_failure(failure);
    log_->error("driver={} claim={} step=prepare handler threw: {}", driver_, claim.describe(), text);
    out->error = claim_error(claim, make_error(ErrorCode::kInternal, "internal error while preparing: " + text));
  }
  if (out->error.empty())
    log_->debug("driver={} claim={} step=prepare devices={} ms={}", driver_, claim.describe(), out->devices.size(),
                ms_since(start));
  else
    log_->info("driver={} claim={} step=prepare failed ms={}: {}", driver_, claim.describe(), ms_since(start), out->error);
}

asio::awaitable<void> DraService::unprepare_one(ClaimRef claim, std::shared_ptr<std::string> out) {
  const auto start = std::chrono::steady_clock::now();
  auto guard = co_await locks_.acquire(claim.uid);
  std::optional<Status> status;
  std::exception_ptr failure;
  try {
    status.emplace(co_await handler_.unprepare(claim));
  } catch (...) {
    failure = std::current_exception();
  }
  if (status && !status->ok()) *out = claim_error(claim, status->error());
  if (failure) {
    if (is_cancellation(failure)) std::rethrow_exception(failure);
    const auto text = describe_failure(failure);
    log_->error("driver={} claim={} step=unprepare handler threw: {}", driver_, claim.describe(), text);
    *out = claim_error(claim, make_error(ErrorCode::kInternal, "internal error while unpreparing: " + text));
  }
  if (out->empty())
    log_->debug("driver={} claim={} step=unprepare ms={}", driver_, claim.describe(), ms_since(start));
  else
    log_->info("driver={} claim={} step=unprepare failed ms={}: {}", driver_, claim.describe(), ms_since(start), *out);
}

}  // namespace nvdra::kubelet
