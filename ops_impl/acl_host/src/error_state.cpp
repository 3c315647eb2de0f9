// aclGetRecentErrMsg and the per-thread error text behind it.
//
// Rules (host runtime):
// - A failing check stores its message as the thread's pending message; a later failure replaces it.
//   Successful calls leave it alone (as CANN, where the message stays until it is read).
// - aclGetRecentErrMsg returns the pending message and consumes it: the next call returns NULL until
//   another failure. The returned text is kept in a second per-thread buffer, so the pointer stays valid
//   until the next aclGetRecentErrMsg call on the same thread (at least until the next ACL call).
// - If the message itself cannot be allocated, a fixed text says so.
#include "error_state.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

#include "acl/acl_rt.h"

namespace aclhost {
namespace {

constexpr const char *kNoMemoryText = "the host runtime ran out of memory while recording the error message";

struct ThreadErrorText {
    std::string pending;
    bool has_pending = false;
    bool pending_is_oom = false;
    std::string returned;
};

ThreadErrorText &Local()
{
    thread_local ThreadErrorText state;
    return state;
}

void StoreOom() noexcept
{
    ThreadErrorText &state = Local();
    state.pending.clear();
    state.has_pending = true;
    state.pending_is_oom = true;
}

}  // namespace

void SetRecentMessage(const std::string &text) noexcept
{
    try {
        ThreadErrorText &state = Local();
        state.pending = text;
        state.has_pending = true;
        state.pending_is_oom = false;
    } catch (...) {
        StoreOom();
    }
}

aclError Fail(aclError code, const char *api, const char *fmt, ...) noexcept
{
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
        ThreadErrorText &state = Local();
        state.pending = std::move(text);
        state.has_pending = true;
        state.pending_is_oom = false;
    } catch (...) {
        StoreOom();
    }
    return code;
}

}  // namespace aclhost

extern "C" const char *aclGetRecentErrMsg(void)
{
    aclhost::ThreadErrorText &state = aclhost::Local();
    if (!state.has_pending) {
        return nullptr;
    }
    state.has_pending = false;
    if (state.pending_is_oom) {
        return aclhost::kNoMemoryText;
    }
    state.returned.swap(state.pending);
    state.pending.clear();
    return state.returned.c_str();
}
