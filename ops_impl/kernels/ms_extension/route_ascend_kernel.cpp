// The op_def route's graph kernels on Ascend: one KernelMod per op of the generated table,
// registered in MindSpore's CustomKernelFactory as "Custom_<op>" (Ascend kernel selection looks
// there first), each running the kernel core of route_kernel.h on the stream MindSpore launches it
// on. Built with -DCUSTOM_ASCEND_OP (CustomOpBuilder adds it for backend "Ascend"); empty otherwise.
//
// These kernels run kernel by kernel (jit_level O0/O1). A launch that finds its stream being
// captured into an aclgraph refuses with an error saying so: the copies read host values and host
// memory at launch time, which a replayed graph would not redo.
#ifdef CUSTOM_ASCEND_OP
#include <dlfcn.h>

#include <memory>
#include <string>
#include <vector>

#include "include/runtime/hardware_abstract/kernel_base/common_utils.h"  // KernelAttr
#include "kernel/ascend/custom/kernel_mod_impl/custom_kernel_factory.h"
#include "route_kernel.h"
#include "route_ops.inc"

namespace msmc {
namespace route {
namespace {

using mindspore::kernel::KernelAttr;
using mindspore::kernel::KernelTensor;

// aclmdlRICaptureGetInfo(stream, &status, &model) where the runtime has it (older CANN releases lack
// it). MindSpore loads CANN with RTLD_LOCAL, so the symbol is looked up through the loaded
// libascendcl's own handle, not RTLD_DEFAULT. Status 0 is "not capturing".
bool StreamIsCapturing(void *stream) {
  using CaptureGetInfo = int (*)(void *, int *, void **);
  static const auto get_info = []() -> CaptureGetInfo {
    void *acl = dlopen("libascendcl.so", RTLD_LAZY | RTLD_NOLOAD);
    return acl == nullptr ? nullptr : reinterpret_cast<CaptureGetInfo>(dlsym(acl, "aclmdlRICaptureGetInfo"));
  }();
  if (get_info == nullptr) {
    return false;
  }
  int status = 0;
  void *model = nullptr;
  return get_info(stream, &status, &model) == 0 && status != 0;
}

class RouteAscendKernel : public mindspore::kernel::KernelMod {
 public:
  explicit RouteAscendKernel(const char *name) : core_(name) {}

  std::vector<KernelAttr> GetOpSupport() override { return {KernelAttr().AddSkipCheckAttr(true)}; }
  void set_fullname(const std::string &fullname) override { fullname_ = fullname; }
  void set_unique_name(const std::string &unique_name) override { unique_name_ = unique_name; }

  bool Init(const std::vector<KernelTensor *> &inputs, const std::vector<KernelTensor *> &) override {
    core_.Init(inputs);
    return true;
  }

  bool Launch(const std::vector<KernelTensor *> &inputs, const std::vector<KernelTensor *> &,
              const std::vector<KernelTensor *> &outputs, void *stream_ptr) override {
    if (StreamIsCapturing(stream_ptr)) {
      MS_EXCEPTION(mindspore::RuntimeError) << "ms_memcopy " << core_.label()
                                            << ": cannot be captured into an aclgraph (graph capture or jit_level "
                                               "O2); run it kernel by kernel with jit_level O0 or O1";
    }
    core_.Launch(inputs, outputs, stream_ptr);
    return true;
  }

 private:
  KernelCore core_;
  std::string fullname_;
  std::string unique_name_;
};

std::vector<std::string> &Unregistered() {
  static std::vector<std::string> names;
  return names;
}

// CustomKernelFactory keeps the first registration of a name: a name another extension took first is
// remembered, and the module refuses to load (KernelsNotRegistered).
bool RegisterKernel(const char *primitive, const char *op) {
  const bool added = mindspore::kernel::CustomKernelFactory::Instance().Register(
      primitive, [op]() { return std::make_shared<RouteAscendKernel>(op); });
  if (!added) {
    Unregistered().push_back(primitive);
  }
  return added;
}

#define MSMC_ROUTE_ASCEND_KERNEL(NAME, OP_DEF) \
  const bool g_registered_##NAME = RegisterKernel("Custom_" #OP_DEF, #NAME);
MSMC_ROUTE_OPS(MSMC_ROUTE_ASCEND_KERNEL)

}  // namespace

std::vector<std::string> KernelsNotRegistered() { return Unregistered(); }
}  // namespace route
}  // namespace msmc
#endif  // CUSTOM_ASCEND_OP
