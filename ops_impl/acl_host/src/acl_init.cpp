// aclInit and aclFinalize.
//
// Host-runtime choices (documented in docs/host_runtime.md):
// - As CANN: a second aclInit returns ACL_ERROR_REPEAT_INITIALIZE (100002) and counts a reference;
//   aclFinalize ends the initialization whatever that count is; aclInit after aclFinalize initializes again.
// - configPath may be NULL or empty. Otherwise the file must exist and be readable, else
//   ACL_ERROR_INVALID_FILE (100003, as CANN's GetStrFromConfigPath). Its content is not interpreted.
// - aclInit resolves the SoC profile (MS_MEMCOPY_SOC); an unknown name fails with ACL_ERROR_INVALID_PARAM
//   and leaves the runtime uninitialized.
// - As CANN (a "finalized" flag, not the reference count): aclFinalize without aclInit succeeds; a second
//   aclFinalize returns ACL_ERROR_REPEAT_FINALIZE (100037) until the next aclInit.
// - aclFinalize waits for every stream to drain; it frees nothing and destroys no stream.
// - Lenience: no other call requires aclInit; devices, streams and memory work without it.
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <mutex>

#include "acl/acl_rt.h"
#include "api_guard.h"
#include "error_state.h"
#include "soc_profile.h"
#include "stream_table.h"

namespace {

std::mutex g_init_mutex;
uint64_t g_init_references = 0;
bool g_finalized = false;

aclError CheckConfigFile(const char *api, const char *path) {
  struct stat info{};
  if (stat(path, &info) != 0) {
    const int err = errno;
    return aclhost::Fail(ACL_ERROR_INVALID_FILE, api, "configPath \"%s\" cannot be read: %s", path, std::strerror(err));
  }
  if (!S_ISREG(info.st_mode)) {
    return aclhost::Fail(ACL_ERROR_INVALID_FILE, api, "configPath \"%s\" is not a regular file", path);
  }
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) {
    return aclhost::Fail(ACL_ERROR_INVALID_FILE, api, "configPath \"%s\" cannot be opened for reading", path);
  }
  return ACL_SUCCESS;
}

}  // namespace

extern "C" aclError aclInit(const char *configPath) {
  return aclhost::GuardedCall("aclInit", [&](const char *api) -> aclError {
    std::lock_guard<std::mutex> lock(g_init_mutex);
    if (g_init_references > 0) {
      ++g_init_references;
      return aclhost::Fail(ACL_ERROR_REPEAT_INITIALIZE, api,
                           "already initialized (reference count now %llu); call aclFinalize once to end it",
                           static_cast<unsigned long long>(g_init_references));
    }
    if (configPath != nullptr && configPath[0] != '\0') {
      ACLHOST_RETURN_IF_ERROR(CheckConfigFile(api, configPath));
    }
    ACLHOST_RETURN_IF_ERROR(aclhost::RequireSoc(api));
    g_init_references = 1;
    g_finalized = false;
    return ACL_SUCCESS;
  });
}

extern "C" aclError aclFinalize(void) {
  return aclhost::GuardedCall("aclFinalize", [&](const char *api) -> aclError {
    {
      std::lock_guard<std::mutex> lock(g_init_mutex);
      if (g_finalized) {
        return aclhost::Fail(ACL_ERROR_REPEAT_FINALIZE, api,
                             "aclFinalize already ran; call aclInit before finalizing again");
      }
      g_init_references = 0;
      g_finalized = true;
    }
    aclhost::DrainAllStreams();
    return ACL_SUCCESS;
  });
}
