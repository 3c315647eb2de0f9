// The op_def route's graph kernel on the CPU target: a NativeCpuKernelMod running the kernel core of
// route_kernel.h for one op. route_cpu_kernel.cpp registers one per op; a test probe derives from it to
// declare other input types (tests/route_probes/).
#ifndef MS_MEMCOPY_ROUTE_CPU_KERNEL_H_
#define MS_MEMCOPY_ROUTE_CPU_KERNEL_H_

#include <vector>

#include "kernel/cpu/cpu_kernel.h"
#include "route_kernel.h"

namespace msmc {
namespace route {

class RouteCpuKernel : public mindspore::kernel::NativeCpuKernelMod {
 public:
  explicit RouteCpuKernel(const char *name) : core_(name) {}

  std::vector<mindspore::kernel::KernelAttr> GetOpSupport() override {
    return {mindspore::kernel::KernelAttr().AddSkipCheckAttr(true)};
  }

  bool Init(const std::vector<mindspore::kernel::KernelTensor *> &inputs,
            const std::vector<mindspore::kernel::KernelTensor *> &) override {
    core_.Init(inputs);
    return true;
  }

  bool Launch(const std::vector<mindspore::kernel::KernelTensor *> &inputs,
              const std::vector<mindspore::kernel::KernelTensor *> &,
              const std::vector<mindspore::kernel::KernelTensor *> &outputs) override {
    core_.Launch(inputs, outputs, nullptr);
    return true;
  }

 private:
  KernelCore core_;
};

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_ROUTE_CPU_KERNEL_H_
