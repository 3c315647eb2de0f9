// SoC profile selection. The table comes from configs/soc_profiles.yaml through the generated
// soc_profiles.inc (never hard-coded here). The profile is chosen from MS_MEMCOPY_SOC at the first
// aclInit or aclrtSetDevice (or lazily by the first call that needs it) and then stays fixed.
#include "soc_profile.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "acl_host/acl_host_ext.h"
#include "api_guard.h"
#include "error_state.h"
#include "soc_profiles.inc"

namespace aclhost {
namespace {

constexpr const char *kSocEnv = ACLHOST_ENV_SOC;

const SocProfile kProfiles[] = {
#define X(name, batch, desc, d2d, null2d, desc_size, extra, streams, peer, device_events) \
  {name, batch, desc, d2d, null2d, desc_size, extra, streams, peer, device_events},
    MS_MEMCOPY_SOC_PROFILES
#undef X
};

std::atomic<const SocProfile *> g_resolved{nullptr};
std::mutex g_resolve_mutex;

const SocProfile *FindProfile(const char *name) {
  for (const SocProfile &profile : kProfiles) {
    if (std::strcmp(profile.name, name) == 0) {
      return &profile;
    }
  }
  return nullptr;
}

// Resolves under the lock; returns NULL (and the rejected name) when MS_MEMCOPY_SOC names no profile.
const SocProfile *Resolve(std::string *rejected) {
  const SocProfile *known = g_resolved.load(std::memory_order_acquire);
  if (known != nullptr) {
    return known;
  }
  std::lock_guard<std::mutex> lock(g_resolve_mutex);
  known = g_resolved.load(std::memory_order_relaxed);
  if (known != nullptr) {
    return known;
  }
  const char *env = std::getenv(kSocEnv);
  const char *name = (env == nullptr || env[0] == '\0') ? MS_MEMCOPY_DEFAULT_SOC : env;
  const SocProfile *profile = FindProfile(name);
  if (profile == nullptr) {
    if (rejected != nullptr) {
      *rejected = name;
    }
    return nullptr;
  }
  g_resolved.store(profile, std::memory_order_release);
  return profile;
}

}  // namespace

aclError RequireSoc(const char *api, const SocProfile **soc) {
  std::string rejected;
  const SocProfile *profile = Resolve(&rejected);
  if (profile != nullptr) {
    if (soc != nullptr) {
      *soc = profile;
    }
    return ACL_SUCCESS;
  }
  std::string names;
  for (const SocProfile &candidate : kProfiles) {
    names += names.empty() ? "" : ", ";
    names += candidate.name;
  }
  return Fail(ACL_ERROR_INVALID_PARAM, api, "%s=\"%s\" names no SoC profile; expected one of: %s", kSocEnv,
              rejected.c_str(), names.c_str());
}

aclError RequireSocFeature(const char *api, bool SocProfile::*feature, const char *unsupported,
                           const SocProfile **soc) {
  const SocProfile *profile = nullptr;
  ACLHOST_RETURN_IF_ERROR(RequireSoc(api, &profile));
  if (soc != nullptr) {
    *soc = profile;
  }
  if (!(profile->*feature)) {
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, api, "%s on SoC %s", unsupported, profile->name);
  }
  return ACL_SUCCESS;
}

const SocProfile *SocOrNull() { return Resolve(nullptr); }

}  // namespace aclhost

extern "C" const char *aclrtGetSocName(void) {
  return aclhost::GuardedText("aclrtGetSocName", [] {
    const aclhost::SocProfile *profile = aclhost::SocOrNull();
    return profile != nullptr ? profile->name : nullptr;
  });
}

extern "C" const char *aclhostGetSocProfile(void) {
  return aclhost::GuardedText("aclhostGetSocProfile", [] {
    const aclhost::SocProfile *profile = aclhost::SocOrNull();
    return profile != nullptr ? profile->name : nullptr;
  });
}
