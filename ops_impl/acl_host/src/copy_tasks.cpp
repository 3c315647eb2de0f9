// Stream tasks that move bytes through the copy engine.
#include "copy_tasks.h"

#include <cstring>

#include "acl/acl_rt.h"
#include "copy_engine.h"

namespace aclhost {

aclError CopyTask::Run(std::string * /*message*/) {
  CopyBytes(item_.dst, item_.src, item_.size);
  return ACL_SUCCESS;
}

aclError StagedCopyTask::Run(std::string * /*message*/) {
  CopyBytes(dst_, staged_.get(), size_);
  return ACL_SUCCESS;
}

aclError Copy2DTask::Run(std::string * /*message*/) {
  Copy2D(dst_, dpitch_, src_, spitch_, width_, height_);
  return ACL_SUCCESS;
}

size_t Copy2DTask::CopiedBytes() const {
  size_t bytes = 0;
  return __builtin_mul_overflow(width_, height_, &bytes) ? SIZE_MAX : bytes;
}

size_t BatchRunTask::CopiedBytes() const {
  size_t total = 0;
  for (size_t i = begin_; i < end_; ++i) {
    if (__builtin_add_overflow(total, items_[i].size, &total)) {
      return SIZE_MAX;
    }
  }
  return total;
}

aclError BatchRunTask::Run(std::string * /*message*/) {
  CopyItems(items_.get() + begin_, end_ - begin_);
  return ACL_SUCCESS;
}

aclError MemsetTask::Run(std::string * /*message*/) {
  std::memset(dst_, value_, count_);
  return ACL_SUCCESS;
}

aclError HostFuncTask::Run(std::string * /*message*/) {
  fn_(user_data_);
  return ACL_SUCCESS;
}

}  // namespace aclhost
