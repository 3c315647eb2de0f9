// Entry layer for MindSpore's ops.Custom(func_type="aot") on the CPU target.
//
// For each kernel symbol K named in configs/ops.yaml this file exports K (the launch), KInit (reads
// the primitive's attributes into a KernelState kept by MindSpore for the kernel's lifetime; the ACL
// runtime is first touched at launch, where MindSpore reports errors with their text) and,
// for the ops with dynamic_shape, KInferShape. A launch declares the framework's tensors as device
// memory, runs the op body on the calling thread's stream and synchronizes before returning,
// because MindSpore may reuse the tensors' memory as soon as the kernel returns.
//
// Errors: no exception escapes as anything but std::exception, which MindSpore catches and reports
// with its what() text: "ms_memcopy <op>: ValueError: <argument>: ..." for bad input (nothing was
// copied) and "ms_memcopy <op>: AclError: <api> failed: <NAME> (<code>) [fail index i]: ..." for a
// failed ACL call.
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "aot_extra.h"
#include "kernel_error.h"
#include "launch_context.h"
#include "op_bodies.h"

using mindspore::AotExtra;
using mindspore::AotKernelData;

namespace msmc {
namespace {

struct AotState : public AotKernelData {
  KernelState state;
};

int64_t OptionalAttr(AotExtra *extra, const char *name) {
  return extra->HasAttr(name) ? extra->GetAttrInt(name) : 0;
}

int InitState(AotExtra *extra, const char *op) {
  try {
    auto holder = std::make_unique<AotState>();
    KernelState &s = holder->state;
    s.buffer_id = OptionalAttr(extra, "buffer_id");
    s.height = OptionalAttr(extra, "height");
    s.width = OptionalAttr(extra, "width");
    s.pitch = OptionalAttr(extra, "pitch");
    s.count = OptionalAttr(extra, "count");
    s.device = HostTargetDevice();
    if (s.height < 0 || s.width < 0 || s.pitch < 0 || s.count < 0) {
      throw InputError("attributes", "height, width, pitch and count must not be negative");
    }
    delete extra->kernel_data_;
    extra->kernel_data_ = holder.release();
    return 0;
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string("ms_memcopy ") + op + ": " + e.what());
  }
}

KernelState &StateOf(void *extra) {
  auto *aot = static_cast<AotExtra *>(extra);
  auto *holder = dynamic_cast<AotState *>(aot->kernel_data_);
  if (holder == nullptr) {
    throw std::logic_error("kernel state missing: the Init function did not run");
  }
  return holder->state;
}

// The arguments of one launch, as TensorArgs, plus the CPU-target launch protocol around a body.
class CpuLaunch {
 public:
  CpuLaunch(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes) {
    args_.reserve(static_cast<size_t>(nparam));
    for (int i = 0; i < nparam; ++i) {
      args_.push_back(TensorArg{params[i], shapes[i], ndims[i], dtypes[i]});
    }
  }
  ~CpuLaunch() {
    if (stream_ != nullptr && !finished_) {
      (void)aclrtSynchronizeStream(stream_);  // an error path: drain before the tensors are unregistered
    }
  }

  const std::vector<TensorArg> &args() const { return args_; }

  aclrtStream Begin() {
    stream_ = ThreadStream();
    memory_.Reserve(args_.size());
    for (const TensorArg &t : args_) {
      memory_.Add(t.data, NumBytes(t, "tensor"));
    }
    memory_.Register();
    return stream_;
  }

  void Finish() {
    finished_ = true;
    Synchronize(stream_);
  }

 private:
  std::vector<TensorArg> args_;
  DeviceMemoryScope memory_;
  aclrtStream stream_ = nullptr;
  bool finished_ = false;
};

template <typename Body>
int RunAot(const char *op, int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra,
           Body body) {
  try {
    KernelState &s = StateOf(extra);
    CpuLaunch launch(nparam, params, ndims, shapes, dtypes);
    aclrtStream stream = launch.Begin();
    body(s, launch.args(), stream);
    launch.Finish();
    return 0;
  } catch (const std::exception &e) {
    throw std::runtime_error(std::string("ms_memcopy ") + op + ": " + e.what());
  }
}

std::vector<int64_t> ShapeOf(int ndim, const int64_t *shape) { return std::vector<int64_t>(shape, shape + ndim); }

}  // namespace
}  // namespace msmc

#define MSMC_AOT extern "C" __attribute__((visibility("default")))
#define MSMC_AOT_INIT(K, OP)                                                                  \
  MSMC_AOT int K##Init(int *, int64_t **, const char **, AotExtra *extra) {                  \
    return msmc::InitState(extra, OP);                                                        \
  }
#define MSMC_AOT_ARGS int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *, void *extra
#define MSMC_AOT_FORWARD nparam, params, ndims, shapes, dtypes, extra

using msmc::KernelState;
using msmc::TensorArg;
using Args = std::vector<TensorArg>;

MSMC_AOT_INIT(MsMemcopyBatchD2H, "MemcpyBatch(d2h)")
MSMC_AOT int MsMemcopyBatchD2H(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyBatch(d2h)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    const size_t k = a.size() - 2;
    msmc::BatchD2H(s, a.data(), k, a[k], a[k + 1], st);
  });
}

MSMC_AOT_INIT(MsMemcopyBatchH2D, "MemcpyBatch(h2d)")
MSMC_AOT int MsMemcopyBatchH2D(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyBatch(h2d)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::BatchH2D(s, a[0], a.data() + 1, a.size() - 1, st);
  });
}

MSMC_AOT_INIT(MsMemcopy2DExtract, "Memcpy2D(extract)")
MSMC_AOT int MsMemcopy2DExtract(MSMC_AOT_ARGS) {
  return msmc::RunAot("Memcpy2D(extract)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::Extract2D(s, a[0], a[1], a[2], a[3], st);
  });
}
MSMC_AOT std::vector<int64_t> MsMemcopy2DExtractInferShape(int *, int64_t **, AotExtra *extra) {
  return {extra->GetAttrInt("height"), extra->GetAttrInt("width")};
}

MSMC_AOT_INIT(MsMemcopy2DExtractLike, "Memcpy2D(extract, gradient)")
MSMC_AOT int MsMemcopy2DExtractLike(MSMC_AOT_ARGS) {
  return msmc::RunAot("Memcpy2D(extract, gradient)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a,
                                                                          aclrtStream st) {
    msmc::ExtractLike2D(s, a[0], a[1], a[2], a[3], a[4], st);
  });
}
MSMC_AOT std::vector<int64_t> MsMemcopy2DExtractLikeInferShape(int *ndims, int64_t **shapes, AotExtra *) {
  return msmc::ShapeOf(ndims[1], shapes[1]);
}

MSMC_AOT_INIT(MsMemcopy2DInsert, "Memcpy2D(insert)")
MSMC_AOT int MsMemcopy2DInsert(MSMC_AOT_ARGS) {
  return msmc::RunAot("Memcpy2D(insert)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::Insert2D(s, a[0], a[1], a[2], a[3], a[4], st);
  });
}
MSMC_AOT std::vector<int64_t> MsMemcopy2DInsertInferShape(int *ndims, int64_t **shapes, AotExtra *) {
  return msmc::ShapeOf(ndims[0], shapes[0]);
}

MSMC_AOT_INIT(MsMemcopy2DD2H, "Memcpy2D(d2h)")
MSMC_AOT int MsMemcopy2DD2H(MSMC_AOT_ARGS) {
  return msmc::RunAot("Memcpy2D(d2h)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::D2H2D(s, a[0], a[1], a[2], st);
  });
}

MSMC_AOT_INIT(MsMemcopy2DH2D, "Memcpy2D(h2d)")
MSMC_AOT int MsMemcopy2DH2D(MSMC_AOT_ARGS) {
  return msmc::RunAot("Memcpy2D(h2d)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::H2D2D(s, a[0], a[1], st);
  });
}

MSMC_AOT_INIT(MsMemcopyDescCopy, "MemcpyWithDesc")
MSMC_AOT int MsMemcopyDescCopy(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyWithDesc", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::DescCopy(s, a[0], a[1], st);
  });
}
MSMC_AOT std::vector<int64_t> MsMemcopyDescCopyInferShape(int *ndims, int64_t **shapes, AotExtra *) {
  return msmc::ShapeOf(ndims[0], shapes[0]);
}

MSMC_AOT_INIT(MsMemcopyDescWindow, "MemcpyWithDesc(window)")
MSMC_AOT int MsMemcopyDescWindow(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyWithDesc(window)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::DescWindow(s, a[0], a[1], a[2], st);
  });
}
MSMC_AOT std::vector<int64_t> MsMemcopyDescWindowInferShape(int *, int64_t **, AotExtra *extra) {
  return {extra->GetAttrInt("count")};
}

MSMC_AOT_INIT(MsMemcopyCondD2D, "MemcpyWithCondition(d2d)")
MSMC_AOT int MsMemcopyCondD2D(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyWithCondition(d2d)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::CondD2D(s, a[0], a[1], st);
  });
}
MSMC_AOT std::vector<int64_t> MsMemcopyCondD2DInferShape(int *ndims, int64_t **shapes, AotExtra *) {
  return msmc::ShapeOf(ndims[0], shapes[0]);
}

MSMC_AOT_INIT(MsMemcopyCondD2H, "MemcpyWithCondition(d2h)")
MSMC_AOT int MsMemcopyCondD2H(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyWithCondition(d2h)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::CondD2H(s, a[0], a[1], a[2], st);
  });
}

MSMC_AOT_INIT(MsMemcopyCondH2D, "MemcpyWithCondition(h2d)")
MSMC_AOT int MsMemcopyCondH2D(MSMC_AOT_ARGS) {
  return msmc::RunAot("MemcpyWithCondition(h2d)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::CondH2D(s, a[0], a[1], st);
  });
}

MSMC_AOT_INIT(MsMemcopy2DWrite, "Memcpy2D(write)")
MSMC_AOT int MsMemcopy2DWrite(MSMC_AOT_ARGS) {
  return msmc::RunAot("Memcpy2D(write)", MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {
    msmc::Write2D(s, a[0], a[1], a[2], a[3], a[4], st);
  });
}

// The block ops take caches..., block_mapping and return one int64 output.
#define MSMC_AOT_BLOCKS(K, OP, BODY)                                                                  \
  MSMC_AOT_INIT(K, OP)                                                                                 \
  MSMC_AOT int K(MSMC_AOT_ARGS) {                                                                      \
    return msmc::RunAot(OP, MSMC_AOT_FORWARD, [](KernelState &s, const Args &a, aclrtStream st) {     \
      const size_t num_caches = a.size() - 2;                                                          \
      BODY(s, a.data(), num_caches, a[num_caches], a[num_caches + 1], st);                             \
    });                                                                                                \
  }

MSMC_AOT_BLOCKS(MsMemcopySwapBlocksD2H, "SwapBlocks(d2h)", msmc::SwapBlocksD2H)
MSMC_AOT_BLOCKS(MsMemcopySwapBlocksH2D, "SwapBlocks(h2d)", msmc::SwapBlocksH2D)
MSMC_AOT_BLOCKS(MsMemcopyCopyBlocks, "CopyBlocks", msmc::CopyBlocks)
