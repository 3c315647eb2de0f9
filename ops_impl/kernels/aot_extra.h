// The layout of MindSpore 2.10's AotExtra / AotKernelData (custom_aot_extra.h), declared here
// because MindSpore's own header pulls in internal headers. Only the vtable order and the data
// members matter: the kernel calls the attribute getters through the vtable and stores its state
// in kernel_data_, which MindSpore deletes through the virtual destructor.
#ifndef MS_MEMCOPY_KERNELS_AOT_EXTRA_H_
#define MS_MEMCOPY_KERNELS_AOT_EXTRA_H_

#include <cstdint>
#include <string>
#include <vector>

namespace mindspore {

class AotKernelData {
 public:
  AotKernelData() = default;
  virtual ~AotKernelData() = default;
};

class AotExtra {
 public:
  AotExtra() = default;
  virtual ~AotExtra() = default;
  virtual bool HasAttr(std::string name) = 0;
  virtual bool GetAttrBool(std::string name) = 0;
  virtual int64_t GetAttrInt(std::string name) = 0;
  virtual float GetAttrFloat(std::string name) = 0;
  virtual std::string GetAttrStr(std::string name) = 0;
  virtual std::vector<int64_t> GetAttrIntVec(std::string name) = 0;
  virtual std::vector<float> GetAttrFloatVec(std::string name) = 0;
  virtual std::vector<std::vector<int64_t>> GetAttrInt2DVec(std::string name) = 0;
  virtual std::vector<std::vector<float>> GetAttrFloat2DVec(std::string name) = 0;

  std::vector<size_t> workspace_;
  AotKernelData *kernel_data_{nullptr};
};

}  // namespace mindspore

#endif  // MS_MEMCOPY_KERNELS_AOT_EXTRA_H_
