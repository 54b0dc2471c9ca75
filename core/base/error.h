// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace etb {

// Where a piece of bad input came from. Tests assert on these fields, not on
// message text. `line` is 0 when unknown (binary formats); `node_id` is
// kNoNode when the error is not about one node.
struct SourceLoc {
  static constexpr uint64_t kNoNode = ~uint64_t{0};
  std::string file;
  uint64_t line = 0;
  uint64_t node_id = kNoNode;
  std::string node_name;
};

// Renders "file:line: node 12 "aten::mm": " (parts that are unknown are left out).
std::string formatLoc(const SourceLoc& loc);

// Bad input: a trace, a flag or a config. Exit code 2 from the tools.
class InputError : public std::runtime_error {
 public:
  InputError(SourceLoc loc, const std::string& what)
      : std::runtime_error(formatLoc(loc) + what), loc_(std::move(loc)) {}
  const SourceLoc& loc() const { return loc_; }

 private:
  SourceLoc loc_;
};

// A bug in etbench itself (a broken invariant). Exit code 1.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A failure while running (libtorch, MPI, NCCL, CUDA). Exit code 1.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
}  // namespace detail
}  // namespace etb

#define ETB_INPUT_ERROR(loc, ...) \
  throw ::etb::InputError((loc), ::etb::detail::concat(__VA_ARGS__))

#define ETB_RUNTIME_ERROR(...) \
  throw ::etb::RuntimeError(::etb::detail::concat(__VA_ARGS__))

#define ETB_CHECK(cond, ...)                                                \
  do {                                                                      \
    if (!(cond)) {                                                          \
      throw ::etb::InternalError(::etb::detail::concat(                     \
          __FILE__, ":", __LINE__, ": check failed: " #cond " ", ##__VA_ARGS__)); \
    }                                                                       \
  } while (0)

#define ETB_CHECK_EQ(a, b, ...)                                              \
  do {                                                                       \
    const auto& etb_a_ = (a);                                                \
    const auto& etb_b_ = (b);                                                \
    if (!(etb_a_ == etb_b_)) {                                               \
      throw ::etb::InternalError(::etb::detail::concat(                      \
          __FILE__, ":", __LINE__, ": check failed: " #a " == " #b " (",     \
          etb_a_, " vs ", etb_b_, ") ", ##__VA_ARGS__));                     \
    }                                                                        \
  } while (0)
