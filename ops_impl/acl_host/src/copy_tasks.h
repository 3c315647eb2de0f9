// Stream tasks that move or set bytes: single copies, staged copies, 2D copies, runs of batch items,
// memsets, host callbacks. (The descriptor copy task lives with the descriptor code.)
#ifndef MS_MEMCOPY_ACL_HOST_COPY_TASKS_H_
#define MS_MEMCOPY_ACL_HOST_COPY_TASKS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "acl_host/acl_host_ext.h"
#include "copy_engine.h"
#include "stream.h"

namespace aclhost {

class CopyTask final : public StreamTask {
 public:
  CopyTask(void *dst, const void *src, size_t size) : item_{dst, src, size} {}
  aclError Run(std::string *message) override;
  size_t CopiedBytes() const override { return item_.size; }
  bool DescribeCopy(CopyItem *copy, CopyItem * /*also_read*/) const override {
    *copy = item_;
    return true;
  }

 private:
  CopyItem item_;
};

// ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE: the source bytes were copied into `staged` when the call was made.
class StagedCopyTask final : public StreamTask {
 public:
  StagedCopyTask(void *dst, std::unique_ptr<unsigned char[]> staged, size_t size)
      : dst_(dst), staged_(std::move(staged)), size_(size) {}
  aclError Run(std::string *message) override;
  size_t CopiedBytes() const override { return size_; }
  bool DescribeCopy(CopyItem *copy, CopyItem * /*also_read*/) const override {
    *copy = CopyItem{dst_, staged_.get(), size_};
    return true;
  }

 private:
  void *dst_;
  std::unique_ptr<unsigned char[]> staged_;
  size_t size_;
};

class Copy2DTask final : public StreamTask {
 public:
  Copy2DTask(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height)
      : dst_(dst), dpitch_(dpitch), src_(src), spitch_(spitch), width_(width), height_(height) {}
  aclError Run(std::string *message) override;
  size_t CopiedBytes() const override;

 private:
  void *dst_;
  size_t dpitch_;
  const void *src_;
  size_t spitch_;
  size_t width_;
  size_t height_;
};

// Items [begin, end) of an item array shared by all the tasks of one batch call.
class BatchRunTask final : public StreamTask {
 public:
  BatchRunTask(std::shared_ptr<const CopyItem[]> items, size_t begin, size_t end)
      : items_(std::move(items)), begin_(begin), end_(end) {}
  aclError Run(std::string *message) override;
  size_t CopiedBytes() const override;

 private:
  std::shared_ptr<const CopyItem[]> items_;
  size_t begin_;
  size_t end_;
};

// aclrtMemsetAsync: count bytes at dst set to value.
class MemsetTask final : public StreamTask {
 public:
  MemsetTask(void *dst, unsigned char value, size_t count) : dst_(dst), value_(value), count_(count) {}
  aclError Run(std::string *message) override;

 private:
  void *dst_;
  unsigned char value_;
  size_t count_;
};

class HostFuncTask final : public StreamTask {
 public:
  HostFuncTask(aclhostHostFunc fn, void *user_data) : fn_(fn), user_data_(user_data) {}
  aclError Run(std::string *message) override;
  bool RunsInWaiter() const override { return false; }  // host functions run on the worker thread

 private:
  aclhostHostFunc fn_;
  void *user_data_;
};

}  // namespace aclhost

#endif  // MS_MEMCOPY_ACL_HOST_COPY_TASKS_H_
