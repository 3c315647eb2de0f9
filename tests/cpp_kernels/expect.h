// What the kernel test programs share: Expect records a failure and goes on, Check stops the program
// when a setup call fails, Finish prints "ALL PASSED" (what tests/test_cpp_kernels.py looks for).
#ifndef MS_MEMCOPY_TESTS_CPP_KERNELS_EXPECT_H_
#define MS_MEMCOPY_TESTS_CPP_KERNELS_EXPECT_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "acl/acl.h"

namespace test {

inline int &Failures() {
  static int failures = 0;
  return failures;
}

inline void Expect(bool ok, const std::string &what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what.c_str());
    ++Failures();
  }
}

inline void Check(aclError ret, const char *what) {
  if (ret != ACL_SUCCESS) {
    std::printf("FATAL: %s returned %d\n", what, ret);
    std::exit(1);
  }
}

inline int Finish() {
  if (Failures() == 0) {
    std::printf("ALL PASSED\n");
    return 0;
  }
  return 1;
}

}  // namespace test

#endif  // MS_MEMCOPY_TESTS_CPP_KERNELS_EXPECT_H_
