// The op_def route's graph kernels on the CPU target: one NativeCpuKernelMod per op of the generated
// table, registered as "Custom_<op>" in MindSpore's CPU kernel factory, each running the kernel core
// of route_kernel.h (the same body as the aot entries and the Ascend kernel). The module is built
// without -DCUSTOM_ASCEND_OP and linked against the wheel's libmindspore_ops_cpu.
#ifndef CUSTOM_ASCEND_OP
#include <memory>
#include <vector>

#include "kernel/cpu/cpu_kernel.h"
#include "route_kernel.h"
#include "route_ops.inc"

namespace msmc {
namespace route {
namespace {

using mindspore::kernel::KernelAttr;
using mindspore::kernel::KernelTensor;

class RouteCpuKernel : public mindspore::kernel::NativeCpuKernelMod {
 public:
  explicit RouteCpuKernel(const char *name) : core_(name) {}

  std::vector<KernelAttr> GetOpSupport() override { return {KernelAttr().AddSkipCheckAttr(true)}; }

  bool Init(const std::vector<KernelTensor *> &inputs, const std::vector<KernelTensor *> &) override {
    core_.Init(inputs);
    return true;
  }

  bool Launch(const std::vector<KernelTensor *> &inputs, const std::vector<KernelTensor *> &,
              const std::vector<KernelTensor *> &outputs) override {
    core_.Launch(inputs, outputs, nullptr);
    return true;
  }

 private:
  KernelCore core_;
};

}  // namespace
}  // namespace route
}  // namespace msmc

namespace mindspore::kernel {
#define MSMC_ROUTE_CPU_KERNEL(NAME, OP_DEF)                                        \
  MS_KERNEL_FACTORY_REG_BY_CREATOR(NativeCpuKernelMod, Custom_##OP_DEF, []() { \
    return std::make_shared<msmc::route::RouteCpuKernel>(#NAME);             \
  });
MSMC_ROUTE_OPS(MSMC_ROUTE_CPU_KERNEL)
}  // namespace mindspore::kernel

// The CPU kernel factory throws at registration when a name is taken, so the module fails to load.
std::vector<std::string> msmc::route::KernelsNotRegistered() { return {}; }
#endif  // CUSTOM_ASCEND_OP
