// The check harness of every C++ test program (tests/cpp: the host runtime, tests/cpp_kernels: the copy
// kernels). A failed check prints "FAIL <file>:<line>[ (<context>)]: <what>" on stderr and counts; the program
// goes on. Finish() ends main: "ALL PASSED" on stdout and 0 (what tests/test_cpp_programs.py and
// tests/test_cpp_kernels.py look for), or the failure count on stderr and 1. Checks may fail on any thread.
//
//   CHECK(cond)                      cond holds
//   CHECK_RET(expr, expected)        the aclError expr is `expected` (else also prints aclGetRecentErrMsg())
//   CHECK_OK(expr)                   CHECK_RET(expr, ACL_SUCCESS)
//   CHECK_MSG("needle", ...)         the newest error message (first line of aclGetRecentErrMsg()) has each needle
//   test::Expect(ok, what)           a check whose description is built at run time
//   test::Require(ret, what)         a setup call that must succeed: prints FATAL and exits 1 otherwise
//   test::HostWaits()                the host runtime's count of host waits (aclhostGetHostWaitCount)
//   test::StreamOnDevice0()          aclInit, device 0 set, a stream created: a test program's start
//   test::Context label(text)        names this thread's failures (e.g. "thread 3") while `label` lives
//   test::LocationOf(p)              aclhostGetMemLocation of p (type, device, base, size), checked to succeed
#ifndef MS_MEMCOPY_TESTS_CPP_CHECK_H_
#define MS_MEMCOPY_TESTS_CPP_CHECK_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"

namespace test {

inline std::atomic<int> &Failures() {
  static std::atomic<int> failures{0};
  return failures;
}

inline std::string &ContextText() {
  thread_local std::string text;
  return text;
}

// Labels the calling thread's failures while it lives.
class Context {
 public:
  explicit Context(std::string text) : saved_(ContextText()) { ContextText() = std::move(text); }
  ~Context() { ContextText() = saved_; }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

 private:
  std::string saved_;
};

inline void Report(const char *file, int line, const std::string &what) {
  const std::string &context = ContextText();
  std::fprintf(stderr, "FAIL %s:%d%s%s%s: %s\n", file, line, context.empty() ? "" : " (", context.c_str(),
               context.empty() ? "" : ")", what.c_str());
  ++Failures();
}

// The location defaults to the caller's (GCC and Clang builtins).
inline void Expect(bool ok, const std::string &what, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (!ok) {
    Report(file, line, what);
  }
}

inline void CheckRet(const char *file, int line, aclError ret, aclError expected, const char *expr) {
  if (ret != expected) {
    const char *msg = aclGetRecentErrMsg();
    Report(file, line,
           std::string(expr) + " returned " + std::to_string(ret) + ", expected " + std::to_string(expected) +
               (msg != nullptr ? std::string(" [") + msg + "]" : ""));
  }
}

// The newest message of the thread's error text (its first line: newer messages come first), or "NULL".
inline std::string NewestMessage() {
  const char *msg = aclGetRecentErrMsg();
  if (msg == nullptr) {
    return "NULL";
  }
  const char *end = std::strchr(msg, '\n');
  return end == nullptr ? std::string(msg) : std::string(msg, end);
}

inline void CheckMessage(const char *file, int line, std::initializer_list<std::string> needles) {
  const std::string msg = NewestMessage();
  for (const std::string &needle : needles) {
    if (msg.find(needle) == std::string::npos) {
      Report(file, line, "newest error message lacks \"" + needle + "\": " + msg);
    }
  }
}

inline void Require(aclError ret, const char *what) {
  if (ret != ACL_SUCCESS) {
    std::printf("FATAL: %s returned %d\n", what, static_cast<int>(ret));
    std::exit(1);
  }
}

// aclhostGetHostWaitCount, which must succeed: the host runtime's count of host waits for a stream or event.
inline uint64_t HostWaits() {
  uint64_t count = 0;
  Require(aclhostGetHostWaitCount(&count), "aclhostGetHostWaitCount");
  return count;
}

// aclInit, aclrtSetDevice(0) and a new stream of device 0 (returned), which must all succeed: a test's start.
inline aclrtStream StreamOnDevice0() {
  Require(aclInit(nullptr), "aclInit");
  Require(aclrtSetDevice(0), "aclrtSetDevice");
  aclrtStream stream = nullptr;
  Require(aclrtCreateStream(&stream), "aclrtCreateStream");
  return stream;
}

inline int Finish() {
  const int failures = Failures().load();
  if (failures != 0) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("ALL PASSED\n");
  return 0;
}

// Where the host runtime has p (aclhostGetMemLocation), which must succeed.
struct MemLocation {
  int32_t type = -1;
  int32_t device = -1;
  uintptr_t base = 0;
  size_t size = 0;
};

inline MemLocation LocationOf(const void *p, const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
  MemLocation where;
  void *base = nullptr;
  CheckRet(file, line, aclhostGetMemLocation(p, &where.type, &where.device, &base, &where.size), ACL_SUCCESS,
           "aclhostGetMemLocation");
  where.base = reinterpret_cast<uintptr_t>(base);
  return where;
}

}  // namespace test

#define CHECK(cond) ::test::Expect(static_cast<bool>(cond), #cond, __FILE__, __LINE__)
#define CHECK_RET(expr, expected) ::test::CheckRet(__FILE__, __LINE__, (expr), (expected), #expr)
#define CHECK_OK(expr) CHECK_RET(expr, ACL_SUCCESS)
#define CHECK_MSG(...) ::test::CheckMessage(__FILE__, __LINE__, {__VA_ARGS__})

#endif  // MS_MEMCOPY_TESTS_CPP_CHECK_H_
