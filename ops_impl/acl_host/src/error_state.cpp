// aclGetRecentErrMsg and the per-thread error text behind it.
//
// Rules (as CANN's source: a thread_local string that reading does not clear):
// - A failing check puts its message in front of the thread's text: new + "\n" + old. Successful calls
//   leave the text alone.
// - aclGetRecentErrMsg returns the text without clearing it: a second read returns it again. NULL when
//   the thread has had no failure. The pointer stays valid until the thread's next failing ACL call.
// - Host-runtime bound (CANN's text grows without limit): past kMaxTextBytes the oldest messages are
//   dropped, whole lines at a time.
// - If the message itself cannot be allocated, a fixed text says so.
#include "error_state.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

#include "acl/acl_rt.h"

namespace aclhost {
namespace {

constexpr const char *kNoMemoryText = "the host runtime ran out of memory while recording the error message";
constexpr size_t kMaxTextBytes = 64 * 1024;

struct ThreadErrorText {
  std::string text;
  bool has_text = false;
  bool is_oom = false;
};

ThreadErrorText &Local() {
  thread_local ThreadErrorText state;
  return state;
}

void StoreOom() noexcept {
  ThreadErrorText &state = Local();
  state.text.clear();
  state.has_text = true;
  state.is_oom = true;
}

// Puts `message` in front of the thread's text (may throw std::bad_alloc).
void Prepend(std::string message) {
  ThreadErrorText &state = Local();
  if (state.has_text && !state.is_oom && !state.text.empty()) {
    message += '\n';
    message += state.text;
  }
  if (message.size() > kMaxTextBytes) {
    const size_t cut = message.rfind('\n', kMaxTextBytes);
    message.resize(cut == std::string::npos ? kMaxTextBytes : cut);
  }
  state.text = std::move(message);
  state.has_text = true;
  state.is_oom = false;
}

}  // namespace

aclError Fail(aclError code, const char *api, const char *fmt, ...) noexcept {
  try {
    std::string text(api != nullptr ? api : "acl");
    text += ": ";
    va_list args;
    va_start(args, fmt);
    va_list again;
    va_copy(again, args);
    const int needed = std::vsnprintf(nullptr, 0, fmt, args);
    va_end(args);
    if (needed > 0) {
      const size_t prefix = text.size();
      text.resize(prefix + static_cast<size_t>(needed) + 1);
      (void)std::vsnprintf(&text[prefix], static_cast<size_t>(needed) + 1, fmt, again);
      text.resize(prefix + static_cast<size_t>(needed));
    }
    va_end(again);
    Prepend(std::move(text));
  } catch (...) {
    StoreOom();
  }
  return code;
}

}  // namespace aclhost

extern "C" const char *aclGetRecentErrMsg(void) {
  const aclhost::ThreadErrorText &state = aclhost::Local();
  if (!state.has_text) {
    return nullptr;
  }
  if (state.is_oom) {
    return aclhost::kNoMemoryText;
  }
  return state.text.c_str();
}
