// Test only (tests/test_tuple_pass.py): the CPU kernel of Custom_ms_memcopy_copy_blocks for float32 caches,
// declaring its variadic input a TUPLE object, as Ascend's kernel selection treats the tuple input of
// a custom kernel. MindSpore then folds the caches into one new tensor (RealMakeTuple) before the
// kernel, which reproduces on CPU what reaches the kernels on Ascend without ms_memcopy's graph pass.
// Built into a variant of the route module without route_cpu_kernel.cpp and without the pass.
#include <memory>
#include <vector>

#include "route_cpu_kernel.h"

namespace msmc {
namespace route {
namespace {

using mindspore::kernel::KernelAttr;

class FoldedTupleCpuKernel : public RouteCpuKernel {
 public:
  FoldedTupleCpuKernel() : RouteCpuKernel("copy_blocks") {}

  // copy_blocks(caches, block_mapping, num_caches) -> nbytes
  std::vector<KernelAttr> GetOpSupport() override {
    return {KernelAttr()
                .AddInputAttr(mindspore::kObjectTypeTuple, mindspore::kNumberTypeFloat32)
                .AddInputAttr(mindspore::kNumberTypeInt64)
                .AddInputAttr(mindspore::kObjectTypeNumber, mindspore::kNumberTypeInt64)
                .AddOutputAttr(mindspore::kNumberTypeInt64)};
  }
};

}  // namespace
}  // namespace route
}  // namespace msmc

namespace mindspore::kernel {
MS_KERNEL_FACTORY_REG_BY_CREATOR(NativeCpuKernelMod, Custom_ms_memcopy_copy_blocks,
                                 []() { return std::make_shared<msmc::route::FoldedTupleCpuKernel>(); });
}  // namespace mindspore::kernel
