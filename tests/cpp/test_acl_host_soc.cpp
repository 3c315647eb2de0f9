// SoC profiles, environment variables and device ids of the host ACL runtime, through the public C API.
//
// The SoC profile is resolved once per process, so each scenario runs in a child process (fork before any
// ACL call) that sets MS_MEMCOPY_SOC / MS_MEMCOPY_DEVICE_COUNT itself. Prints "ALL PASSED" and exits 0,
// or lists the failed checks and exits 1.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl_host/acl_host_ext.h"
#include "check.h"

namespace {

// Invalid names and values first, then Ascend310P: no batch, no descriptors, no 2D D2D.
void Ascend310PScenario() {
  setenv(ACLHOST_ENV_SOC, "NoSuchChip", 1);
  setenv(ACLHOST_ENV_DEVICE_COUNT, "two", 1);
  CHECK(aclrtGetSocName() == nullptr);
  CHECK(aclhostGetSocProfile() == nullptr);
  CHECK_RET(aclInit(nullptr), ACL_ERROR_INVALID_PARAM);
  CHECK_MSG("MS_MEMCOPY_SOC", "NoSuchChip", "Ascend910B", "Ascend310P");
  CHECK_RET(aclFinalize(), ACL_SUCCESS);  // as CANN: finalizing an uninitialized runtime succeeds once
  CHECK_RET(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_ERROR_INVALID_PARAM);
  CHECK_MSG("MS_MEMCOPY_DEVICE_COUNT");
  setenv(ACLHOST_ENV_DEVICE_COUNT, "2", 1);
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count == 2);
  CHECK_RET(aclrtSetDevice(0), ACL_ERROR_INVALID_PARAM);  // the SoC name is still invalid
  CHECK_RET(aclrtSetDevice(2), ACL_ERROR_RT_INVALID_DEVICEID);

  setenv(ACLHOST_ENV_SOC, "Ascend310P", 1);  // retried by the next call
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  setenv(ACLHOST_ENV_SOC, "Ascend950", 1);  // resolved once: later changes are ignored
  CHECK(aclrtGetSocName() != nullptr && std::strcmp(aclrtGetSocName(), "Ascend310P") == 0);
  CHECK(aclhostGetSocProfile() != nullptr && std::strcmp(aclhostGetSocProfile(), "Ascend310P") == 0);

  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  void *dev1 = nullptr;
  CHECK_RET(aclrtMalloc(&dev1, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK(test::LocationOf(dev1).size == 160);
  CHECK(test::LocationOf(dev1).device == 1);
  void *huge = nullptr;
  CHECK_RET(aclrtMalloc(&huge, 100, ACL_MEM_MALLOC_HUGE1G_ONLY), ACL_SUCCESS);
  CHECK(test::LocationOf(huge).size == 128);  // no padding for the 1G-page policies
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  void *dev0 = nullptr;
  CHECK_RET(aclrtMalloc(&dev0, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK(test::LocationOf(dev0).device == 0);
  void *pinned = nullptr;
  CHECK_RET(aclrtMallocHost(&pinned, 4096), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);

  // A copy between the two devices is a D2D copy once each device has enabled the other (310P has peer
  // access).
  std::memset(pinned, 0x3C, 4096);
  CHECK_RET(aclrtMemcpyAsync(dev1, 96, pinned, 96, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev0, 4096, dev1, 96, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_SYS_DMA);
  CHECK_RET(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtDeviceEnablePeerAccess(0, 0), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(1), ACL_SUCCESS);  // the aclrtSetDevice(1) just above
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);  // the aclrtSetDevice(0) just above
  CHECK_RET(aclrtMemcpyAsync(dev0, 4096, dev1, 96, ACL_MEMCPY_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  // Feature gates of the profile.
  void *dsts[1] = {dev0};
  void *srcs[1] = {pinned};
  size_t sizes[1] = {64};
  size_t index[1] = {0};
  size_t fail_index = 0;
  aclrtMemcpyBatchAttr attr = {};
  attr.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  attr.dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  CHECK_RET(aclrtMemcpyBatchAsync(dsts, sizes, srcs, sizes, 1, &attr, index, 1, &fail_index, stream),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_MSG("Ascend310P");
  CHECK_RET(aclrtMemcpyBatch(dsts, sizes, srcs, sizes, 1, &attr, index, 1, &fail_index),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpyBatchV2(dsts, sizes, srcs, sizes, 1, &attr, index, 1), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpyBatchAsyncV2(dsts, sizes, srcs, sizes, 1, &attr, index, 1, stream),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  size_t desc_size = 0;
  CHECK_RET(aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtSetMemcpyDesc(dev0, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, dev0, dev0, 64, nullptr),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(dev0, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpy2dAsync(dev0, 64, dev1, 32, 32, 2, ACL_MEMCPY_DEVICE_TO_DEVICE, stream),
            ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtMemcpy2dAsync(dev0, 64, pinned, 32, 32, 2, ACL_MEMCPY_HOST_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  // No default-stream path for 2D copies on this SoC: a NULL stream is 107000 even with a device set.
  CHECK_RET(aclrtMemcpy2dAsync(dev0, 64, pinned, 32, 32, 2, ACL_MEMCPY_HOST_TO_DEVICE, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("Ascend310P has no default stream");

  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  for (void *p : {dev0, dev1, huge}) {
    CHECK_RET(aclrtFree(p), ACL_SUCCESS);
  }
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
}

// Ascend950: 64-byte descriptors, no malloc padding, batch copies available.
void Ascend950Scenario() {
  setenv(ACLHOST_ENV_SOC, "Ascend950", 1);
  unsetenv(ACLHOST_ENV_DEVICE_COUNT);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);  // resolves the profile without aclInit
  CHECK(aclrtGetSocName() != nullptr && std::strcmp(aclrtGetSocName(), "Ascend950") == 0);
  size_t desc_size = 0;
  CHECK_RET(aclrtGetMemcpyDescSize(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, &desc_size), ACL_SUCCESS);
  CHECK(desc_size == 64);

  void *small = nullptr;
  CHECK_RET(aclrtMalloc(&small, 32, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK(test::LocationOf(small).size == 32);
  void *desc = nullptr;
  CHECK_RET(aclrtMalloc(&desc, desc_size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void *a = nullptr;
  void *b = nullptr;
  CHECK_RET(aclrtMalloc(&a, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&b, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<unsigned char> data(256);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<unsigned char>(i * 3 + 1);
  }
  // Batch H2D of the pattern into a (the profile supports batches).
  void *dsts[2] = {a, static_cast<char *>(a) + 128};
  void *srcs[2] = {data.data(), data.data() + 128};
  size_t sizes[2] = {128, 128};
  size_t index[1] = {0};
  size_t fail_index = 0;
  aclrtMemcpyBatchAttr attr = {};
  attr.srcLoc = {0, ACL_MEM_LOCATION_TYPE_HOST};
  attr.dstLoc = {0, ACL_MEM_LOCATION_TYPE_DEVICE};
  CHECK_RET(aclrtMemcpyBatch(dsts, sizes, srcs, sizes, 2, &attr, index, 1, &fail_index), ACL_SUCCESS);
  CHECK(fail_index == SIZE_MAX);
  // A device-id mismatch in the attribute fails the item.
  attr.dstLoc.id = 1;
  CHECK_RET(aclrtMemcpyBatch(dsts, sizes, srcs, sizes, 2, &attr, index, 1, &fail_index), ACL_ERROR_RT_PARAM_INVALID);
  CHECK(fail_index == 0);
  CHECK_MSG("device 0");

  // The 32-byte allocation cannot hold a 64-byte descriptor.
  CHECK_RET(aclrtSetMemcpyDesc(small, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, 256, nullptr),
            ACL_ERROR_RT_PARAM_INVALID);
  CHECK_MSG("descriptor size 64");
  CHECK_RET(aclrtSetMemcpyDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, a, b, 256, nullptr), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsyncWithDesc(desc, ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  std::vector<unsigned char> out(256);
  CHECK_RET(aclrtMemcpy(out.data(), out.size(), b, out.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(out == data);
  // The NULL stream of aclrtMemcpy2dAsync is the default stream here.
  std::vector<unsigned char> rows(64);
  CHECK_RET(aclrtMemcpy2dAsync(rows.data(), 32, a, 64, 32, 2, ACL_MEMCPY_DEVICE_TO_HOST, nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  CHECK(std::memcmp(rows.data(), data.data(), 32) == 0 && std::memcmp(rows.data() + 32, data.data() + 64, 32) == 0);

  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  for (void *p : {small, desc, a, b}) {
    CHECK_RET(aclrtFree(p), ACL_SUCCESS);
  }
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
}

// Runs a scenario in a child process; returns true when it passed.
bool RunInChild(const char *name, void (*scenario)()) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return false;
  }
  if (pid == 0) {
    scenario();
    std::fflush(nullptr);
    _exit(test::Failures() == 0 ? 0 : 1);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "scenario %s failed (status 0x%x)\n", name, static_cast<unsigned>(status));
    return false;
  }
  return true;
}

}  // namespace

int main() {
  bool ok = RunInChild("Ascend310P", Ascend310PScenario);
  ok = RunInChild("Ascend950", Ascend950Scenario) && ok;
  if (!ok) {
    return 1;
  }
  std::printf("ALL PASSED\n");
  return 0;
}
