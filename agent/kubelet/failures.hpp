#pragma once
// What a coroutine's captured exception means: a cancellation (operation_aborted), and the text to
// report otherwise. Branches of `||` or a parallel group that failed together arrive as
// asio::multiple_exceptions; both look at the first.
#include <boost/asio/error.hpp>
#include <boost/asio/multiple_exceptions.hpp>
#include <boost/system/system_error.hpp>

#include <exception>
#include <string>

namespace nvdra::kubelet {

inline bool is_cancellation(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const boost::asio::multiple_exceptions& several) {
    return is_cancellation(several.first_exception());
  } catch (const boost::system::system_error& e) {
    return e.code() == boost::asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

inline std::string describe_failure(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const boost::asio::multiple_exceptions& several) {
    return describe_failure(several.first_exception());
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace nvdra::kubelet
