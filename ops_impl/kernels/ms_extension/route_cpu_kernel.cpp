// The op_def route's graph kernels on the CPU target: one RouteCpuKernel (route_cpu_kernel.h) per op of
// the generated table, registered as "Custom_<op>" in MindSpore's CPU kernel factory, each running the
// kernel core of route_kernel.h (the same body as the eager entry and the Ascend kernel). The module is built
// without -DCUSTOM_ASCEND_OP and linked against the wheel's libmindspore_ops_cpu.
#ifndef CUSTOM_ASCEND_OP
#include "route_cpu_kernel.h"

#include <memory>
#include <string>
#include <vector>

#include "route_ops.inc"

namespace mindspore::kernel {
#define MSMC_ROUTE_CPU_KERNEL(NAME, OP_DEF)                             \
  MS_KERNEL_FACTORY_REG_BY_CREATOR(NativeCpuKernelMod, Custom_##OP_DEF, \
                                   []() { return std::make_shared<msmc::route::RouteCpuKernel>(#NAME); });
MSMC_ROUTE_OPS(MSMC_ROUTE_CPU_KERNEL)
}  // namespace mindspore::kernel

// The CPU kernel factory throws at registration when a name is taken, so the module fails to load.
std::vector<std::string> msmc::route::KernelsNotRegistered() { return {}; }
#endif  // CUSTOM_ASCEND_OP
