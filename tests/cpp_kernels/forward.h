// For the kernel tests that define ACL calls themselves, to count or record them, and forward them to the
// runtime library (the kernel sources are linked into the program, so their calls bind there first):
//
//   test::Next<Fn>("aclrtMemcpyAsync")   the runtime library's function (FATAL and exit 1 when it is missing)
#ifndef MS_MEMCOPY_TESTS_CPP_KERNELS_FORWARD_H_
#define MS_MEMCOPY_TESTS_CPP_KERNELS_FORWARD_H_

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace test {

template <typename Fn>
Fn Next(const char *name) {
  void *fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::printf("FATAL: %s not found in the ACL library\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace test

#endif  // MS_MEMCOPY_TESTS_CPP_KERNELS_FORWARD_H_
